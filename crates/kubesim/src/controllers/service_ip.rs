//! Cluster IPs (from `10.96.0.0/12`, as kubeadm and kind configure) and node ports
//! (30000–32767) for Services, allocated on create the way the API server's Service
//! storage does, with its defaults for the fields that come with them. Used when kubesim
//! runs workloads; a bare API server leaves Services as written.

use std::collections::HashSet;
use std::net::Ipv4Addr;

use serde_json::{Value, json};

/// The first address of the service CIDR, and how many it holds.
const BASE: u32 = u32::from_be_bytes([10, 96, 0, 0]);
const SIZE: u32 = 1 << 20;
const NODE_PORTS: std::ops::RangeInclusive<u16> = 30000..=32767;

/// The addresses and node ports in use.
#[derive(Debug, Default)]
pub(crate) struct ServiceIps {
    ips: HashSet<u32>,
    next_ip: u32,
    ports: HashSet<u16>,
    next_port: u16,
}

impl ServiceIps {
    /// Give the Service `svc` its cluster IP (unless headless or ExternalName) and node
    /// ports (for NodePort and LoadBalancer), keeping those it asks for when free. The error
    /// is the API server's message for a taken address or port.
    pub(crate) fn allocate(&mut self, svc: &mut Value) -> Result<(), String> {
        let Some(spec) = svc.get_mut("spec").and_then(Value::as_object_mut) else { return Ok(()) };
        let type_ = spec.get("type").and_then(Value::as_str).unwrap_or("ClusterIP").to_owned();
        if type_ == "ExternalName" {
            return Ok(());
        }
        let asked = spec.get("clusterIP").and_then(Value::as_str).unwrap_or_default().to_owned();
        let ip = if asked == "None" {
            asked
        } else if asked.is_empty() {
            self.next_free_ip().ok_or("Invalid value: \"\": range is full".to_owned())?
        } else {
            let offset =
                asked.parse::<Ipv4Addr>().ok().map(|a| u32::from(a).wrapping_sub(BASE)).filter(|o| *o < SIZE);
            if let Some(offset) = offset
                && !self.ips.insert(offset)
            {
                return Err(format!(
                    "Invalid value: []string{{\"{asked}\"}}: failed to allocate IP {asked}: provided IP is already allocated"
                ));
            }
            asked
        };
        spec.insert("clusterIP".into(), json!(ip));
        spec.insert("clusterIPs".into(), json!([ip]));
        spec.entry("ipFamilies").or_insert_with(|| json!(["IPv4"]));
        spec.entry("ipFamilyPolicy").or_insert_with(|| json!("SingleStack"));
        spec.entry("internalTrafficPolicy").or_insert_with(|| json!("Cluster"));
        if type_ == "NodePort" || type_ == "LoadBalancer" {
            spec.entry("externalTrafficPolicy").or_insert_with(|| json!("Cluster"));
            for port in spec.get_mut("ports").and_then(Value::as_array_mut).into_iter().flatten() {
                match port.get("nodePort").and_then(Value::as_u64).and_then(|p| u16::try_from(p).ok()) {
                    Some(p) if !self.ports.insert(p) => {
                        return Err(format!("Invalid value: {p}: provided port is already allocated"));
                    }
                    Some(_) => {}
                    None => {
                        let p = self.next_free_port().ok_or("Invalid value: 0: range is full".to_owned())?;
                        port["nodePort"] = json!(p);
                    }
                }
            }
        }
        Ok(())
    }

    /// Return a deleted Service's address and node ports.
    pub(crate) fn release(&mut self, svc: &Value) {
        if let Some(a) =
            svc.pointer("/spec/clusterIP").and_then(Value::as_str).and_then(|a| a.parse::<Ipv4Addr>().ok())
        {
            self.ips.remove(&u32::from(a).wrapping_sub(BASE));
        }
        for p in svc.pointer("/spec/ports").and_then(Value::as_array).into_iter().flatten() {
            if let Some(n) = p["nodePort"].as_u64().and_then(|n| u16::try_from(n).ok()) {
                self.ports.remove(&n);
            }
        }
    }

    fn next_free_ip(&mut self) -> Option<String> {
        // .0 is the network, .1 the `kubernetes` Service's; start after them.
        for _ in 0..SIZE {
            self.next_ip = (self.next_ip + 1) % SIZE;
            let offset = self.next_ip;
            if offset >= 2 && self.ips.insert(offset) {
                return Some(Ipv4Addr::from(BASE + offset).to_string());
            }
        }
        None
    }

    fn next_free_port(&mut self) -> Option<u16> {
        let span = NODE_PORTS.end() - NODE_PORTS.start() + 1;
        for _ in 0..span {
            self.next_port = (self.next_port + 1) % span;
            let port = NODE_PORTS.start() + self.next_port;
            if self.ports.insert(port) {
                return Some(port);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::ServiceIps;
    use serde_json::json;

    #[test]
    fn addresses_are_unique_and_asked_ones_kept() {
        let mut ips = ServiceIps::default();
        let mut a = json!({"spec": {"ports": [{"port": 80}]}});
        ips.allocate(&mut a).expect("allocated");
        assert_eq!(a["spec"]["clusterIP"], "10.96.0.2");
        assert_eq!(a["spec"]["clusterIPs"], json!(["10.96.0.2"]));
        assert_eq!(a["spec"]["ipFamilyPolicy"], "SingleStack");
        let mut taken = json!({"spec": {"clusterIP": "10.96.0.2"}});
        let e = ips.allocate(&mut taken).expect_err("taken");
        assert!(e.ends_with("failed to allocate IP 10.96.0.2: provided IP is already allocated"), "{e}");
        ips.release(&a);
        ips.allocate(&mut taken).expect("free again");
        let mut headless = json!({"spec": {"clusterIP": "None"}});
        ips.allocate(&mut headless).expect("headless");
        assert_eq!(headless["spec"]["clusterIPs"], json!(["None"]));
        let mut external = json!({"spec": {"type": "ExternalName", "externalName": "x.example.com"}});
        ips.allocate(&mut external).expect("external");
        assert!(external["spec"].get("clusterIP").is_none());
    }

    #[test]
    fn node_ports_for_node_port_services() {
        let mut ips = ServiceIps::default();
        let mut svc =
            json!({"spec": {"type": "NodePort", "ports": [{"port": 80}, {"port": 443, "nodePort": 30443}]}});
        ips.allocate(&mut svc).expect("allocated");
        let first = svc["spec"]["ports"][0]["nodePort"].as_u64().expect("a node port");
        assert!((30000..=32767).contains(&first));
        let mut again = json!({"spec": {"type": "NodePort", "ports": [{"port": 1, "nodePort": 30443}]}});
        assert!(ips.allocate(&mut again).is_err());
    }
}
