#![allow(clippy::unwrap_used)]

use super::decode::{base64, decode_int_or_string, decode_quantity, decode_time};
use super::table::{Card, Schema, Ty, fields_of};
use super::wire::{END_GROUP, FIXED32, FIXED64, LEN, START_GROUP, VARINT, go_string};
use super::*;
use serde_json::json;

/// Request bodies captured from kubectl 1.32 against a loopback server, with the JSON kubectl
/// prints for the same object (`--dry-run=client -o json`, i.e. Go's `json.Marshal`).
const REAL: &[(&str, &str, &str)] = &[
    (
        "kubectl create configmap a --from-literal=x=1",
        "6b3873000a0f0a0276311209436f6e6669674d617012220a180a016112001a0764656661756c7422\
         002a0032003800420012060a01781201311a002200",
        r#"{"apiVersion":"v1","data":{"x":"1"},"kind":"ConfigMap","metadata":{"creationTimestamp":null,"name":"a","namespace":"default"}}"#,
    ),
    (
        "kubectl create configmap bin --from-file=/tmp/cap/bin.dat",
        "6b3873000a0f0a0276311209436f6e6669674d617012320a1a0a0362696e12001a0764656661756c\
         7422002a003200380042001a140a0762696e2e64617412090001fffe68656c6c6f1a002200",
        r#"{"apiVersion":"v1","binaryData":{"bin.dat":"AAH//mhlbGxv"},"kind":"ConfigMap","metadata":{"creationTimestamp":null,"name":"bin","namespace":"default"}}"#,
    ),
    (
        "kubectl create secret generic s --from-literal=user=admin --type=Opaque",
        "6b3873000a0c0a027631120653656372657412310a180a017312001a0764656661756c7422002a00\
         320038004200120d0a0475736572120561646d696e1a064f70617175651a002200",
        r#"{"apiVersion":"v1","data":{"user":"YWRtaW4="},"kind":"Secret","metadata":{"creationTimestamp":null,"name":"s","namespace":"default"},"type":"Opaque"}"#,
    ),
    (
        "kubectl create namespace ns1",
        "6b3873000a0f0a02763112094e616d657370616365121b0a130a036e733112001a0022002a003200\
         3800420012001a020a001a002200",
        r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"creationTimestamp":null,"name":"ns1"},"spec":{},"status":{}}"#,
    ),
    (
        "kubectl create serviceaccount sa1",
        "6b3873000a140a027631120e536572766963654163636f756e74121c0a1a0a0373613112001a0764\
         656661756c7422002a003200380042001a002200",
        r#"{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"creationTimestamp":null,"name":"sa1","namespace":"default"}}"#,
    ),
    (
        "kubectl create deployment web --image=nginx --replicas=3 --port=80",
        "6b3873000a150a07617070732f7631120a4465706c6f796d656e7412bf010a260a0377656212001a\
         0764656661756c7422002a003200380042005a0a0a0361707012037765621286010803120c0a0a0a\
         0361707012037765621a6c0a1c0a0012001a0022002a003200380042005a0a0a0361707012037765\
         62124c122e0a056e67696e7812056e67696e782a00320a0a001000185022002a0042006a00720080\
         0100880100900100a201001a00320042004a0052005800600068008201008a01009a0100c2010022\
         020a00280038001a0c0800100018002000280038001a002200",
        r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"creationTimestamp":null,"labels":{"app":"web"},"name":"web","namespace":"default"},"spec":{"replicas":3,"selector":{"matchLabels":{"app":"web"}},"strategy":{},"template":{"metadata":{"creationTimestamp":null,"labels":{"app":"web"}},"spec":{"containers":[{"image":"nginx","name":"nginx","ports":[{"containerPort":80}],"resources":{}}]}}},"status":{}}"#,
    ),
    (
        "kubectl create deployment zero --image=nginx --replicas=0",
        "6b3873000a150a07617070732f7631120a4465706c6f796d656e7412b6010a280a047a65726f1200\
         1a0764656661756c7422002a003200380042005a0b0a0361707012047a65726f127c0800120d0a0b\
         0a0361707012047a65726f1a610a1d0a0012001a0022002a003200380042005a0b0a036170701204\
         7a65726f124012220a056e67696e7812056e67696e782a0042006a007200800100880100900100a2\
         01001a00320042004a0052005800600068008201008a01009a0100c2010022020a00280038001a0c\
         0800100018002000280038001a002200",
        r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"creationTimestamp":null,"labels":{"app":"zero"},"name":"zero","namespace":"default"},"spec":{"replicas":0,"selector":{"matchLabels":{"app":"zero"}},"strategy":{},"template":{"metadata":{"creationTimestamp":null,"labels":{"app":"zero"}},"spec":{"containers":[{"image":"nginx","name":"nginx","resources":{}}]}}},"status":{}}"#,
    ),
    (
        "kubectl create service nodeport svc2 --tcp=80:8080 --node-port=30080",
        "6b3873000a0d0a02763112075365727669636512740a280a047376633212001a0764656661756c74\
         22002a003200380042005a0b0a0361707012047376633212440a1d0a0738302d3830383012035443\
         5018502207080010903f1a002880eb01120b0a036170701204737663321a0022084e6f6465506f72\
         743a00420052005a00600068001a020a001a002200",
        r#"{"apiVersion":"v1","kind":"Service","metadata":{"creationTimestamp":null,"labels":{"app":"svc2"},"name":"svc2","namespace":"default"},"spec":{"ports":[{"name":"80-8080","nodePort":30080,"port":80,"protocol":"TCP","targetPort":8080}],"selector":{"app":"svc2"},"type":"NodePort"},"status":{"loadBalancer":{}}}"#,
    ),
    (
        "kubectl create job j1 --image=busybox -- echo hi",
        "6b3873000a0f0a0862617463682f763112034a6f62128b010a190a026a3112001a0764656661756c\
         7422002a00320038004200126432620a100a0012001a0022002a00320038004200124e122b0a026a\
         31120762757379626f781a046563686f1a0268692a0042006a007200800100880100900100a20100\
         1a054e65766572320042004a0052005800600068008201008a01009a0100c201001a082000280030\
         003a001a002200",
        r#"{"apiVersion":"batch/v1","kind":"Job","metadata":{"creationTimestamp":null,"name":"j1","namespace":"default"},"spec":{"template":{"metadata":{"creationTimestamp":null},"spec":{"containers":[{"command":["echo","hi"],"image":"busybox","name":"j1","resources":{}}],"restartPolicy":"Never"}}},"status":{}}"#,
    ),
    (
        "kubectl create cronjob c1 --image=busybox '--schedule=*/1 * * * *' --restart=OnFailure -- date",
        "6b3873000a130a0862617463682f7631120743726f6e4a6f6212ab010a190a02633112001a076465\
         6661756c7422002a00320038004200128b010a0b2a2f31202a202a202a202a1a002a7a0a120a0263\
         3112001a0022002a00320038004200126432620a100a0012001a0022002a00320038004200124e12\
         270a026331120762757379626f781a04646174652a0042006a007200800100880100900100a20100\
         1a094f6e4661696c757265320042004a0052005800600068008201008a01009a0100c201001a001a\
         002200",
        r#"{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"creationTimestamp":null,"name":"c1","namespace":"default"},"spec":{"jobTemplate":{"metadata":{"creationTimestamp":null,"name":"c1"},"spec":{"template":{"metadata":{"creationTimestamp":null},"spec":{"containers":[{"command":["date"],"image":"busybox","name":"c1","resources":{}}],"restartPolicy":"OnFailure"}}}},"schedule":"*/1 * * * *"},"status":{}}"#,
    ),
    (
        "kubectl create role r1 --verb=get,list --resource=pods --resource-name=a",
        "6b3873000a240a1c726261632e617574686f72697a6174696f6e2e6b38732e696f2f76311204526f\
         6c6512330a190a02723112001a0764656661756c7422002a0032003800420012160a036765740a04\
         6c69737412001a04706f64732201611a002200",
        r#"{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"creationTimestamp":null,"name":"r1","namespace":"default"},"rules":[{"apiGroups":[""],"resourceNames":["a"],"resources":["pods"],"verbs":["get","list"]}]}"#,
    ),
    (
        "kubectl create rolebinding rb1 --role=r1 --user=alice --serviceaccount=default:sa1 --group=g1",
        "6b3873000a2b0a1c726261632e617574686f72697a6174696f6e2e6b38732e696f2f7631120b526f\
         6c6542696e64696e6712bb010a1a0a0372623112001a0764656661756c7422002a00320038004200\
         122a0a04557365721219726261632e617574686f72697a6174696f6e2e6b38732e696f1a05616c69\
         6365220012280a0547726f75701219726261632e617574686f72697a6174696f6e2e6b38732e696f\
         1a026731220012200a0e536572766963654163636f756e7412001a03736131220764656661756c74\
         1a250a19726261632e617574686f72697a6174696f6e2e6b38732e696f1204526f6c651a0272311a\
         002200",
        r#"{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"creationTimestamp":null,"name":"rb1","namespace":"default"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"r1"},"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"alice"},{"apiGroup":"rbac.authorization.k8s.io","kind":"Group","name":"g1"},{"kind":"ServiceAccount","name":"sa1","namespace":"default"}]}"#,
    ),
    (
        "kubectl create clusterrole cr1 --verb=get --non-resource-url=/logs",
        "6b3873000a2b0a1c726261632e617574686f72697a6174696f6e2e6b38732e696f2f7631120b436c\
         7573746572526f6c6512230a130a0363723112001a0022002a00320038004200120c0a036765742a\
         052f6c6f67731a002200",
        r#"{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"creationTimestamp":null,"name":"cr1"},"rules":[{"nonResourceURLs":["/logs"],"verbs":["get"]}]}"#,
    ),
    (
        "kubectl create clusterrolebinding crb1 --clusterrole=cr1 --user=bob",
        "6b3873000a320a1c726261632e617574686f72697a6174696f6e2e6b38732e696f2f76311212436c\
         7573746572526f6c6542696e64696e67126f0a140a046372623112001a0022002a00320038004200\
         12280a04557365721219726261632e617574686f72697a6174696f6e2e6b38732e696f1a03626f62\
         22001a2d0a19726261632e617574686f72697a6174696f6e2e6b38732e696f120b436c7573746572\
         526f6c651a036372311a002200",
        r#"{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"creationTimestamp":null,"name":"crb1"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"cr1"},"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"bob"}]}"#,
    ),
    (
        "kubectl create priorityclass pc1 --value=1000 --description=hi --global-default=true --preemption-policy=Never",
        "6b3873000a250a147363686564756c696e672e6b38732e696f2f7631120d5072696f72697479436c\
         61737312250a130a0370633112001a0022002a0032003800420010e8071801220268692a054e6576\
         65721a002200",
        r#"{"apiVersion":"scheduling.k8s.io/v1","description":"hi","globalDefault":true,"kind":"PriorityClass","metadata":{"creationTimestamp":null,"name":"pc1"},"preemptionPolicy":"Never","value":1000}"#,
    ),
    (
        "kubectl create priorityclass pc0 --value=0",
        "6b3873000a250a147363686564756c696e672e6b38732e696f2f7631120d5072696f72697479436c\
         61737312310a130a0370633012001a0022002a003200380042001000180022002a14507265656d70\
         744c6f7765725072696f726974791a002200",
        r#"{"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"creationTimestamp":null,"name":"pc0"},"preemptionPolicy":"PreemptLowerPriority","value":0}"#,
    ),
    (
        "kubectl create poddisruptionbudget pdb2 --selector=app=web --max-unavailable=50%",
        "6b3873000a200a09706f6c6963792f76311213506f6444697372757074696f6e4275646765741244\
         0a1b0a047064623212001a0764656661756c7422002a003200380042001219120c0a0a0a03617070\
         12037765621a09080110001a033530251a0a080018002000280030001a002200",
        r#"{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"creationTimestamp":null,"name":"pdb2","namespace":"default"},"spec":{"maxUnavailable":"50%","selector":{"matchLabels":{"app":"web"}}},"status":{"currentHealthy":0,"desiredHealthy":0,"disruptionsAllowed":0,"expectedPods":0}}"#,
    ),
    (
        "kubectl create ingress ing1 --rule=foo.com/bar=svc1:8080,tls=my-cert --class=nginx --annotation=a=b",
        "6b3873000a1f0a146e6574776f726b696e672e6b38732e696f2f76311207496e677265737312750a\
         230a04696e673112001a0764656661756c7422002a0032003800420062060a0161120162124a1212\
         0a07666f6f2e636f6d12076d792d636572741a2d0a07666f6f2e636f6d12220a200a1e0a042f6261\
         72120f220d0a047376633112050a0010903f1a05457861637422056e67696e781a020a001a002200",
        r#"{"apiVersion":"networking.k8s.io/v1","kind":"Ingress","metadata":{"annotations":{"a":"b"},"creationTimestamp":null,"name":"ing1","namespace":"default"},"spec":{"ingressClassName":"nginx","rules":[{"host":"foo.com","http":{"paths":[{"backend":{"service":{"name":"svc1","port":{"number":8080}}},"path":"/bar","pathType":"Exact"}]}}],"tls":[{"hosts":["foo.com"],"secretName":"my-cert"}]},"status":{"loadBalancer":{}}}"#,
    ),
    (
        "kubectl create quota q1 --hard=cpu=1,memory=1Gi,pods=10,requests.cpu=500m --scopes=BestEffort",
        "6b3873000a130a027631120d5265736f7572636551756f7461126e0a190a02713112001a07646566\
         61756c7422002a00320038004200124f0a0a0a0363707512030a01310a0f0a066d656d6f72791205\
         0a033147690a0c0a04706f647312040a0231300a160a0c72657175657374732e63707512060a0435\
         30306d120a426573744566666f72741a001a002200",
        r#"{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"creationTimestamp":null,"name":"q1","namespace":"default"},"spec":{"hard":{"cpu":"1","memory":"1Gi","pods":"10","requests.cpu":"500m"},"scopes":["BestEffort"]},"status":{}}"#,
    ),
    (
        "kubectl create token sa1 --audience=aud1 --duration=1h",
        "6b3873000a280a1861757468656e7469636174696f6e2e6b38732e696f2f7631120c546f6b656e52\
         65717565737412230a100a0012001a0022002a0032003800420012090a046175643120901c1a040a\
         0012001a002200",
        r#"{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","metadata":{"creationTimestamp":null},"spec":{"audiences":["aud1"],"boundObjectRef":null,"expirationSeconds":3600},"status":{"expirationTimestamp":null,"token":""}}"#,
    ),
    (
        "kubectl drain n1 --disable-eviction --grace-period=7",
        "6b3873000a130a027631120d44656c6574654f7074696f6e73120208071a002200",
        r#"{"apiVersion":"v1","gracePeriodSeconds":7,"kind":"DeleteOptions"}"#,
    ),
];

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

/// A tiny protobuf encoder for building bodies by hand.
#[derive(Default, Clone)]
struct Enc(Vec<u8>);

impl Enc {
    fn new() -> Self {
        Enc::default()
    }
    fn varint(mut self, mut v: u64) -> Self {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
        self
    }
    fn tag(self, num: u64, wire: u8) -> Self {
        self.varint((num << 3) | u64::from(wire))
    }
    fn int(self, num: u64, v: i64) -> Self {
        self.tag(num, VARINT).varint(v as u64)
    }
    fn bytes(self, num: u64, b: &[u8]) -> Self {
        let mut e = self.tag(num, LEN).varint(b.len() as u64);
        e.0.extend_from_slice(b);
        e
    }
    fn str(self, num: u64, s: &str) -> Self {
        self.bytes(num, s.as_bytes())
    }
    fn msg(self, num: u64, m: Enc) -> Self {
        self.bytes(num, &m.0)
    }
    fn entry(self, num: u64, k: &str, v: &str) -> Self {
        self.msg(num, Enc::new().str(1, k).str(2, v))
    }
    fn raw(mut self, b: &[u8]) -> Self {
        self.0.extend_from_slice(b);
        self
    }
}

/// `k8s\0` + `runtime.Unknown` around `raw`, as client-go writes it.
fn body(api_version: &str, kind: &str, raw: Enc) -> Vec<u8> {
    let unknown =
        Enc::new().msg(1, Enc::new().str(1, api_version).str(2, kind)).msg(2, raw).str(3, "").str(4, "");
    [MAGIC.as_slice(), &unknown.0].concat()
}

/// An object's field 1: ObjectMeta with only name/namespace set.
fn meta(name: &str, namespace: &str) -> Enc {
    Enc::new().msg(1, object_meta(name, namespace))
}

/// ObjectMeta the way Go marshals one with only name/namespace set.
fn object_meta(name: &str, namespace: &str) -> Enc {
    Enc::new()
        .str(1, name)
        .str(2, "")
        .str(3, namespace)
        .str(4, "")
        .str(5, "")
        .str(6, "")
        .int(7, 0)
        .msg(8, Enc::new())
}

fn dec(api_version: &str, kind: &str, raw: Enc) -> Value {
    decode(&body(api_version, kind, raw)).unwrap()
}

fn err(api_version: &str, kind: &str, raw: Enc) -> ProtoError {
    decode(&body(api_version, kind, raw)).unwrap_err()
}

#[test]
fn real_kubectl_bodies_decode_to_kubectl_json() {
    for (cmd, hex, want) in REAL {
        let want: Value = serde_json::from_str(want).unwrap();
        assert_eq!(decode(&unhex(hex)).unwrap(), want, "{cmd}");
    }
}

#[test]
fn corrupted_bodies_never_panic() {
    let mut decoded = 0;
    for (_, hex, _) in REAL {
        let body = unhex(hex);
        for len in 0..body.len() {
            decoded += usize::from(decode(&body[..len]).is_ok());
        }
        for i in 0..body.len() {
            for x in [0x00, 0x01, 0x7f, 0x80, 0xff] {
                let mut b = body.clone();
                b[i] ^= x;
                decoded += usize::from(decode(&b).is_ok());
            }
        }
    }
    // Some corruptions still decode (e.g. a flipped byte inside a string).
    assert!(decoded > 0);
}

#[test]
fn hand_built_configmap_is_byte_exact_with_kubectl() {
    let raw = meta("a", "default").entry(2, "x", "1");
    let built = body("v1", "ConfigMap", raw);
    assert_eq!(built, unhex(REAL[0].1));
    assert_eq!(
        decode(&built).unwrap(),
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "a", "namespace": "default", "creationTimestamp": null},
               "data": {"x": "1"}})
    );
}

#[test]
fn table_is_consistent_and_acyclic() {
    let schema = table::schema();
    assert_eq!(schema.len(), 280);
    assert!(schema.windows(2).all(|w| w[0].name < w[1].name), "the table is sorted by name");
    let has = |name: &str| fields_of(schema, name).is_ok();
    for root in ROOTS {
        assert!(has(root), "{root}");
    }
    for (_, prefix) in GROUP_VERSIONS {
        assert!(ROOTS.iter().any(|r| r.starts_with(&format!("{prefix}."))) || *prefix == "meta");
    }
    // Depth-first walk: every referenced message exists and no message contains itself,
    // so decoding recursion is bounded by the table.
    fn walk(schema: &'static Schema, name: &str, stack: &mut Vec<String>) {
        assert!(!stack.iter().any(|s| s == name), "cycle through {name}");
        stack.push(name.to_string());
        for f in fields_of(schema, name).unwrap() {
            if let Ty::Msg(sub) = f.ty {
                assert!(fields_of(schema, sub).is_ok(), "{name} -> {sub}");
                walk(schema, sub, stack);
            }
            assert!(!f.inline || matches!(f.ty, Ty::Msg(_)));
        }
        stack.pop();
    }
    for m in schema {
        walk(schema, m.name, &mut Vec::new());
    }
    let fields = fields_of(schema, "core.PodSpec").unwrap();
    let containers = fields.iter().find(|f| f.num == 2).unwrap();
    assert_eq!((containers.json, containers.omit_empty, containers.card), ("containers", false, Card::List));
}

#[test]
fn dispatch_by_api_version_and_kind() {
    assert!(supports("v1", "ConfigMap"));
    assert!(supports("apps/v1", "Deployment"));
    assert!(supports("authentication.k8s.io/v1", "TokenRequest"));
    assert!(supports("apps/v1", "DeleteOptions"));
    assert!(supports("example.com/v9", "DeleteOptions"));
    assert!(!supports("apps/v1", "ConfigMap"));
    assert!(!supports("v1", "ObjectMeta"));
    assert!(!supports("v1", "Node"));
    assert!(!supports("apps/v1beta1", "Deployment"));
}

#[test]
fn namespace_serviceaccount_secret() {
    assert_eq!(
        dec("v1", "Namespace", meta("ns1", "")),
        json!({"apiVersion": "v1", "kind": "Namespace",
               "metadata": {"name": "ns1", "creationTimestamp": null},
               "spec": {}, "status": {}})
    );
    let sa = meta("sa1", "default").msg(3, Enc::new().str(1, "regcred")).int(4, 0);
    assert_eq!(
        dec("v1", "ServiceAccount", sa),
        json!({"apiVersion": "v1", "kind": "ServiceAccount",
               "metadata": {"name": "sa1", "namespace": "default", "creationTimestamp": null},
               "imagePullSecrets": [{"name": "regcred"}],
               "automountServiceAccountToken": false})
    );
    let secret = meta("s", "default")
        .msg(2, Enc::new().str(1, "a").bytes(2, b"\x00\xffab"))
        .msg(2, Enc::new().str(1, "empty").bytes(2, b""))
        .msg(2, Enc::new().str(1, "novalue"))
        .entry(4, "plain", "text")
        .str(3, "Opaque")
        .int(5, 1);
    assert_eq!(
        dec("v1", "Secret", secret),
        json!({"apiVersion": "v1", "kind": "Secret",
               "metadata": {"name": "s", "namespace": "default", "creationTimestamp": null},
               "data": {"a": "AP9hYg==", "empty": "", "novalue": ""},
               "stringData": {"plain": "text"}, "type": "Opaque", "immutable": true})
    );
}

#[test]
fn token_request() {
    let spec = Enc::new()
        .str(1, "aud1")
        .str(1, "aud2")
        .int(4, 0)
        .msg(3, Enc::new().str(1, "Pod").str(2, "v1").str(3, "p1").str(4, "uid-1"));
    let status = Enc::new().str(1, "").msg(2, Enc::new());
    let v = dec("authentication.k8s.io/v1", "TokenRequest", meta("", "").msg(2, spec).msg(3, status));
    assert_eq!(
        v,
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
               "metadata": {"creationTimestamp": null},
               "spec": {"audiences": ["aud1", "aud2"], "expirationSeconds": 0,
                        "boundObjectRef": {"kind": "Pod", "apiVersion": "v1",
                                           "name": "p1", "uid": "uid-1"}},
               "status": {"token": "", "expirationTimestamp": null}})
    );
}

fn container(name: &str, image: &str) -> Enc {
    Enc::new()
        .str(1, name)
        .str(2, image)
        .msg(8, Enc::new())
        .str(13, "/dev/termination-log")
        .str(14, "IfNotPresent")
        .int(16, 0)
        .int(17, 0)
        .int(18, 0)
        .str(20, "File")
}

fn template(labels: &[(&str, &str)], spec: Enc) -> Enc {
    let mut m = object_meta("", "");
    for (k, v) in labels {
        m = m.entry(11, k, v);
    }
    Enc::new().msg(1, m).msg(2, spec)
}

#[test]
fn deployment_with_strategy_probe_and_resources() {
    let c = container("web", "nginx")
        .msg(6, Enc::new().str(1, "http").int(2, 0).int(3, 80).str(4, "TCP").str(5, ""))
        .msg(
            7,
            Enc::new()
                .str(1, "POD")
                .str(2, "")
                .msg(3, Enc::new().msg(1, Enc::new().str(1, "v1").str(2, "metadata.name"))),
        )
        .msg(
            8,
            Enc::new()
                .msg(1, Enc::new().str(1, "cpu").msg(2, Enc::new().str(1, "500m")))
                .msg(2, Enc::new().str(1, "memory").msg(2, Enc::new().str(1, "64Mi"))),
        )
        .msg(
            10,
            Enc::new()
                .msg(
                    1,
                    Enc::new().msg(
                        2,
                        Enc::new()
                            .str(1, "/healthz")
                            .msg(2, Enc::new().int(1, 1).int(2, 0).str(3, "http"))
                            .str(3, "")
                            .str(4, "HTTP"),
                    ),
                )
                .int(2, 0)
                .int(3, 1)
                .int(4, 10)
                .int(5, 1)
                .int(6, 3),
        );
    let pod = Enc::new().msg(2, c).str(3, "Always").int(4, 30).str(6, "ClusterFirst");
    let strategy = Enc::new().str(1, "RollingUpdate").msg(
        2,
        Enc::new()
            .msg(1, Enc::new().int(1, 1).int(2, 0).str(3, "25%"))
            .msg(2, Enc::new().int(1, 0).int(2, 1).str(3, "")),
    );
    let spec = Enc::new()
        .int(1, 0)
        .msg(2, Enc::new().entry(1, "app", "web"))
        .msg(3, template(&[("app", "web")], pod))
        .msg(4, strategy)
        .int(5, 0)
        .int(6, 10)
        .int(7, 0)
        .int(9, 600);
    let v = dec("apps/v1", "Deployment", meta("web", "default").msg(2, spec).msg(3, Enc::new()));
    let want = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "creationTimestamp": null},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}, "creationTimestamp": null},
                "spec": {
                    "containers": [{
                        "name": "web", "image": "nginx",
                        "ports": [{"name": "http", "containerPort": 80, "protocol": "TCP"}],
                        "env": [{"name": "POD", "valueFrom": {"fieldRef":
                            {"apiVersion": "v1", "fieldPath": "metadata.name"}}}],
                        "resources": {"limits": {"cpu": "500m"},
                                      "requests": {"memory": "64Mi"}},
                        "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http",
                                                      "scheme": "HTTP"},
                                          "timeoutSeconds": 1, "periodSeconds": 10,
                                          "successThreshold": 1, "failureThreshold": 3},
                        "terminationMessagePath": "/dev/termination-log",
                        "terminationMessagePolicy": "File",
                        "imagePullPolicy": "IfNotPresent"
                    }],
                    "restartPolicy": "Always",
                    "terminationGracePeriodSeconds": 30,
                    "dnsPolicy": "ClusterFirst"
                }
            },
            "strategy": {"type": "RollingUpdate",
                         "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": 1}},
            "revisionHistoryLimit": 10,
            "progressDeadlineSeconds": 600
        },
        "status": {}
    });
    assert_eq!(v, want);
}

#[test]
fn service_ports_and_selector() {
    let port = |name: &str, port: i64, target: Enc| {
        Enc::new().str(1, name).str(2, "TCP").int(3, port).msg(4, target).int(5, 0)
    };
    let spec = Enc::new()
        .msg(1, port("http", 80, Enc::new().int(1, 1).int(2, 0).str(3, "web")))
        .msg(1, port("", 0, Enc::new().int(1, 0).int(2, 0).str(3, "")))
        .entry(2, "app", "web")
        .str(3, "None")
        .str(4, "ClusterIP")
        .str(7, "")
        .str(8, "")
        .str(10, "")
        .str(11, "")
        .int(12, 0)
        .int(13, 0);
    let v = dec("v1", "Service", meta("svc", "default").msg(2, spec).msg(3, Enc::new().msg(1, Enc::new())));
    assert_eq!(
        v,
        json!({"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": "svc", "namespace": "default",
                            "creationTimestamp": null},
               "spec": {"ports": [{"name": "http", "protocol": "TCP", "port": 80,
                                   "targetPort": "web"},
                                  {"protocol": "TCP", "port": 0, "targetPort": 0}],
                        "selector": {"app": "web"}, "clusterIP": "None",
                        "type": "ClusterIP"},
               "status": {"loadBalancer": {}}})
    );
}

#[test]
fn job_and_cronjob_with_pointer_zeros_and_repeated_ints() {
    let pod = Enc::new().msg(2, container("c", "busybox").str(3, "date")).str(3, "Never");
    let rule = |values: Enc| Enc::new().str(1, "FailJob").msg(2, Enc::new().str(2, "In").raw(&values.0));
    let job = Enc::new()
        .int(7, 0)
        .int(10, 0)
        .int(8, -1)
        .msg(
            11,
            Enc::new()
                // unpacked, as Go writes it
                .msg(1, rule(Enc::new().int(3, 1).int(3, -3)))
                // packed [4, 5]
                .msg(1, rule(Enc::new().bytes(3, &[4, 5])))
                // packed but empty: stays a nil slice
                .msg(1, rule(Enc::new().bytes(3, &[]))),
        )
        .msg(6, template(&[], pod));
    let v = dec("batch/v1", "Job", meta("j", "default").msg(2, job.clone()));
    let spec = &v["spec"];
    assert_eq!(spec["backoffLimit"], json!(0));
    assert_eq!(spec["suspend"], json!(false));
    assert_eq!(spec["ttlSecondsAfterFinished"], json!(-1));
    assert!(spec.get("parallelism").is_none());
    let rules = &spec["podFailurePolicy"]["rules"];
    assert_eq!(rules[0]["onExitCodes"]["values"], json!([1, -3]));
    assert_eq!(rules[1]["onExitCodes"]["values"], json!([4, 5]));
    assert_eq!(rules[2], json!({"action": "FailJob", "onExitCodes": {"operator": "In", "values": null}}));
    assert_eq!(spec["template"]["spec"]["containers"][0]["command"], json!(["date"]));
    assert_eq!(v["status"], json!({}));

    let cron = Enc::new()
        .str(1, "*/1 * * * *")
        .str(3, "")
        .msg(5, Enc::new().msg(1, object_meta("", "")).msg(2, job));
    let v = dec("batch/v1", "CronJob", meta("c", "default").msg(2, cron));
    assert_eq!(v["spec"]["schedule"], json!("*/1 * * * *"));
    assert!(v["spec"].get("concurrencyPolicy").is_none());
    assert_eq!(v["spec"]["jobTemplate"]["metadata"], json!({"creationTimestamp": null}));
    assert_eq!(v["spec"]["jobTemplate"]["spec"]["backoffLimit"], json!(0));
}

#[test]
fn rbac_kinds() {
    let rule = Enc::new().str(1, "get").str(1, "list").str(2, "").str(3, "pods").str(4, "a");
    let v = dec("rbac.authorization.k8s.io/v1", "Role", meta("r", "default").msg(2, rule));
    assert_eq!(
        v["rules"],
        json!([{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"],
                "resourceNames": ["a"]}])
    );
    let v = dec("rbac.authorization.k8s.io/v1", "Role", meta("r", "default"));
    assert_eq!(v["rules"], Value::Null);

    let v = dec(
        "rbac.authorization.k8s.io/v1",
        "ClusterRole",
        meta("cr", "").msg(3, Enc::new().msg(1, Enc::new().entry(1, "a", "b"))),
    );
    assert_eq!(
        v,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": "cr", "creationTimestamp": null}, "rules": null,
               "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"a": "b"}}]}})
    );

    let subject = |kind: &str, group: &str, name: &str, ns: &str| {
        Enc::new().str(1, kind).str(2, group).str(3, name).str(4, ns)
    };
    let role_ref = Enc::new().str(1, "rbac.authorization.k8s.io").str(2, "ClusterRole").str(3, "view");
    let binding = meta("rb", "default")
        .msg(2, subject("User", "rbac.authorization.k8s.io", "alice", ""))
        .msg(2, subject("ServiceAccount", "", "sa1", "default"))
        .msg(3, role_ref.clone());
    let v = dec("rbac.authorization.k8s.io/v1", "RoleBinding", binding);
    assert_eq!(
        v["subjects"],
        json!([{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"},
               {"kind": "ServiceAccount", "name": "sa1", "namespace": "default"}])
    );
    assert_eq!(
        v["roleRef"],
        json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
               "name": "view"})
    );
    let v = dec("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", meta("crb", ""));
    assert_eq!(v["roleRef"], json!({"apiGroup": "", "kind": "", "name": ""}));
    assert!(v.get("subjects").is_none());
}

#[test]
fn priorityclass_pdb_ingress_quota() {
    let v = dec(
        "scheduling.k8s.io/v1",
        "PriorityClass",
        meta("pc", "").int(2, 0).int(3, 0).str(4, "").str(5, "Never"),
    );
    assert_eq!(
        v,
        json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
               "metadata": {"name": "pc", "creationTimestamp": null},
               "value": 0, "preemptionPolicy": "Never"})
    );

    let pdb = Enc::new()
        .msg(1, Enc::new().int(1, 0).int(2, 0).str(3, ""))
        .msg(2, Enc::new().entry(1, "app", "web"))
        .msg(3, Enc::new().int(1, 1).int(2, 0).str(3, "50%"));
    let v = dec("policy/v1", "PodDisruptionBudget", meta("pdb", "default").msg(2, pdb));
    assert_eq!(
        v["spec"],
        json!({"minAvailable": 0, "maxUnavailable": "50%",
               "selector": {"matchLabels": {"app": "web"}}})
    );
    assert_eq!(
        v["status"],
        json!({"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0,
               "expectedPods": 0})
    );

    let backend = |name: &str, port: Enc| Enc::new().msg(4, Enc::new().str(1, name).msg(2, port));
    let path =
        Enc::new().str(1, "/bar").msg(2, backend("svc1", Enc::new().str(1, "").int(2, 8080))).str(3, "Exact");
    let rule = Enc::new().str(1, "foo.com").msg(2, Enc::new().msg(1, Enc::new().msg(1, path)));
    let spec = Enc::new()
        .msg(1, backend("def", Enc::new().str(1, "http").int(2, 0)))
        .msg(2, Enc::new().str(1, "foo.com").str(2, "cert"))
        .msg(3, rule)
        .str(4, "nginx");
    let v = dec("networking.k8s.io/v1", "Ingress", meta("ing", "default").msg(2, spec));
    assert_eq!(
        v["spec"],
        json!({"ingressClassName": "nginx",
               "defaultBackend": {"service": {"name": "def", "port": {"name": "http"}}},
               "tls": [{"hosts": ["foo.com"], "secretName": "cert"}],
               "rules": [{"host": "foo.com", "http": {"paths": [{
                   "path": "/bar", "pathType": "Exact",
                   "backend": {"service": {"name": "svc1", "port": {"number": 8080}}}}]}}]})
    );
    assert_eq!(v["status"], json!({"loadBalancer": {}}));

    let q = |k: &str, v: &str| Enc::new().str(1, k).msg(2, Enc::new().str(1, v));
    let spec = Enc::new()
        .msg(1, q("cpu", "1"))
        .msg(1, q("memory", "1Gi"))
        .msg(1, Enc::new().str(1, "pods"))
        .str(2, "BestEffort")
        .msg(3, Enc::new().msg(1, Enc::new().str(1, "PriorityClass").str(2, "Exists")));
    let v = dec("v1", "ResourceQuota", meta("q", "default").msg(2, spec));
    assert_eq!(
        v["spec"],
        json!({"hard": {"cpu": "1", "memory": "1Gi", "pods": "0"},
               "scopes": ["BestEffort"],
               "scopeSelector": {"matchExpressions": [
                   {"scopeName": "PriorityClass", "operator": "Exists"}]}})
    );
    assert_eq!(v["status"], json!({}));
}

#[test]
fn delete_options_in_any_group_version_and_eviction() {
    let opts = Enc::new().int(1, 0).msg(2, Enc::new().str(1, "uid-1")).str(4, "Foreground").str(5, "All");
    let v = dec("apps/v1", "DeleteOptions", opts.clone());
    assert_eq!(
        v,
        json!({"apiVersion": "apps/v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0,
               "preconditions": {"uid": "uid-1"}, "propagationPolicy": "Foreground",
               "dryRun": ["All"]})
    );
    let v = dec("policy/v1", "Eviction", meta("p", "default").msg(2, opts));
    assert_eq!(v["deleteOptions"]["gracePeriodSeconds"], json!(0));
}

#[test]
fn auth_reviews_and_string_list_maps() {
    let user = Enc::new()
        .str(1, "alice")
        .str(3, "g1")
        .msg(4, Enc::new().str(1, "scopes").msg(2, Enc::new().str(1, "a").str(1, "b")))
        .msg(4, Enc::new().str(1, "none").msg(2, Enc::new()));
    let v =
        dec("authentication.k8s.io/v1", "SelfSubjectReview", meta("", "").msg(2, Enc::new().msg(1, user)));
    assert_eq!(
        v["status"],
        json!({"userInfo": {"username": "alice", "groups": ["g1"],
                            "extra": {"scopes": ["a", "b"], "none": null}}})
    );
    let attrs = Enc::new().str(1, "default").str(2, "get").str(5, "pods");
    let v = dec(
        "authorization.k8s.io/v1",
        "SelfSubjectAccessReview",
        meta("", "").msg(2, Enc::new().msg(1, attrs)),
    );
    assert_eq!(
        v["spec"],
        json!({"resourceAttributes": {"namespace": "default", "verb": "get",
                                      "resource": "pods"}})
    );
    assert_eq!(v["status"], json!({"allowed": false}));
}

#[test]
fn pod_volumes_inline_structs_and_ephemeral_containers() {
    let volume = Enc::new().str(1, "cfg").msg(
        2,
        Enc::new().msg(
            19,
            Enc::new()
                .msg(1, Enc::new().str(1, "my-config"))
                .msg(2, Enc::new().str(1, "k").str(2, "k.txt"))
                .int(3, 420),
        ),
    );
    let empty_dir = Enc::new()
        .str(1, "tmp")
        .msg(2, Enc::new().msg(2, Enc::new().str(1, "").msg(2, Enc::new().str(1, "1Gi"))));
    let eph = Enc::new().msg(1, container("debug", "busybox")).str(2, "app");
    let spec = Enc::new().msg(1, volume).msg(1, empty_dir).msg(2, container("app", "nginx")).msg(34, eph);
    let v = dec("v1", "Pod", meta("p", "default").msg(2, spec));
    assert_eq!(
        v["spec"]["volumes"],
        json!([{"name": "cfg", "configMap": {"name": "my-config",
                    "items": [{"key": "k", "path": "k.txt"}], "defaultMode": 420}},
               {"name": "tmp", "emptyDir": {"sizeLimit": "1Gi"}}])
    );
    let eph = &v["spec"]["ephemeralContainers"][0];
    assert_eq!(eph["name"], json!("debug"));
    assert_eq!(eph["targetContainerName"], json!("app"));
    assert_eq!(eph["resources"], json!({}));
    assert_eq!(v["status"], json!({}));
}

#[test]
fn unknown_fields_of_every_wire_type_are_skipped() {
    let junk = Enc::new()
        .int(99, 5)
        .tag(98, FIXED64)
        .raw(&[1; 8])
        .str(97, "x")
        .tag(96, FIXED32)
        .raw(&[2; 4])
        .tag(95, START_GROUP)
        .int(1, 1)
        .tag(2, START_GROUP)
        .tag(2, END_GROUP)
        .tag(95, END_GROUP);
    let raw = meta("a", "default")
        .raw(&junk.0)
        .entry(2, "x", "1")
        .msg(2, Enc::new().str(1, "y").raw(&junk.0).str(2, "2"));
    let unknown =
        Enc::new().raw(&junk.0).msg(1, Enc::new().str(1, "v1").raw(&junk.0).str(2, "ConfigMap")).msg(2, raw);
    let v = decode(&[MAGIC.as_slice(), &unknown.0].concat()).unwrap();
    assert_eq!(v["data"], json!({"x": "1", "y": "2"}));
    assert_eq!(v["metadata"]["name"], json!("a"));
}

#[test]
fn merging_and_last_wins() {
    let raw = Enc::new()
        .msg(1, Enc::new().str(1, "first").entry(11, "a", "1"))
        .msg(1, Enc::new().str(1, "second").entry(11, "b", "2").entry(11, "a", "3"));
    let v = dec("v1", "ConfigMap", raw);
    assert_eq!(
        v["metadata"],
        json!({"name": "second", "labels": {"a": "3", "b": "2"},
               "creationTimestamp": null})
    );
}

fn time_of(secs: i64, nanos: i64) -> Value {
    decode_time(&Enc::new().int(1, secs).int(2, nanos).0, false).unwrap()
}

#[test]
fn timestamps() {
    assert_eq!(decode_time(&[], false).unwrap(), Value::Null);
    assert_eq!(time_of(0, 0), json!("1970-01-01T00:00:00Z"));
    assert_eq!(time_of(1_700_000_000, 999_999_999), json!("2023-11-14T22:13:20Z"));
    assert_eq!(time_of(951_782_400, 0), json!("2000-02-29T00:00:00Z"));
    assert_eq!(time_of(-1, 0), json!("1969-12-31T23:59:59Z"));
    assert_eq!(time_of(0, -1), json!("1969-12-31T23:59:59Z"));
    assert_eq!(time_of(0, 1_500_000_000), json!("1970-01-01T00:00:01Z"));
    // nanos is an int32 on the wire: Go truncates, so 2.5e9 wraps negative.
    assert_eq!(time_of(0, 2_500_000_000), json!("1969-12-31T23:59:58Z"));
    assert_eq!(time_of(253_402_128_000, 0), json!("9999-12-30T00:00:00Z"));
    let too_late = Enc::new().int(1, 253_402_300_800).int(2, 0);
    assert!(matches!(decode_time(&too_late.0, false), Err(ProtoError::TimeOutOfRange { .. })));
    assert_eq!(time_of(-62_135_596_800, 0), Value::Null);
    assert_eq!(time_of(-62_135_596_800, 1), json!("0001-01-01T00:00:00Z"));
    assert_eq!(time_of(-62_135_596_801, 0), json!("0000-12-31T23:59:59Z"));
    assert_eq!(time_of(-62_198_755_200, 0), json!("-0001-01-01T00:00:00Z"));
    for (secs, nanos) in [(i64::MAX, 0), (i64::MIN, i64::from(i32::MIN))] {
        let extreme = Enc::new().int(1, secs).int(2, nanos);
        assert!(decode_time(&extreme.0, false).is_err(), "{secs}");
    }
    let micro = Enc::new().int(1, 1_700_000_000).int(2, 123_456_789);
    assert_eq!(decode_time(&micro.0, true).unwrap(), json!("2023-11-14T22:13:20.123456Z"));

    let ts = |s: i64| Enc::new().int(1, s).int(2, 0);
    let lease = Enc::new().str(1, "me").int(2, 15).msg(3, ts(0)).msg(4, Enc::new());
    let v = dec("coordination.k8s.io/v1", "Lease", meta("l", "ns").msg(2, lease));
    assert_eq!(
        v["spec"],
        json!({"holderIdentity": "me", "leaseDurationSeconds": 15,
               "acquireTime": "1970-01-01T00:00:00.000000Z", "renewTime": null})
    );
    let v = dec("v1", "ConfigMap", Enc::new().msg(1, Enc::new().msg(8, ts(86_400))));
    assert_eq!(v["metadata"]["creationTimestamp"], json!("1970-01-02T00:00:00Z"));
    let v = dec("v1", "ConfigMap", Enc::new().msg(1, Enc::new().msg(9, Enc::new())));
    assert_eq!(v["metadata"]["deletionTimestamp"], Value::Null);
}

#[test]
fn quantities() {
    for ok in ["0", "1", "100m", "1Gi", "1.5", ".5", "1.", "+1", "-2k", "1e3", "1E-3", "-"] {
        let b = Enc::new().str(1, ok);
        assert_eq!(decode_quantity(&b.0).unwrap(), json!(ok), "{ok}");
    }
    assert_eq!(decode_quantity(&[]).unwrap(), json!("0"));
    for bad in ["", "abc", "1 Gi", "1Gi2x", "1..2", "1.2.3"] {
        let b = Enc::new().str(1, bad);
        assert!(matches!(decode_quantity(&b.0), Err(ProtoError::QuantityFormat(_))), "{bad}");
    }
    for bad in ["1kk", "1Ki2", "1mi", "1e", "--1"] {
        let b = Enc::new().str(1, bad);
        assert!(matches!(decode_quantity(&b.0), Err(ProtoError::QuantitySuffix(_))), "{bad}");
    }
    let raw = Enc::new().msg(2, Enc::new().msg(1, Enc::new().str(1, "pods").msg(2, Enc::new().str(1, "x"))));
    assert!(matches!(
        err("v1", "ResourceQuota", raw),
        ProtoError::QuantityFormat(q) if q == "x"
    ));
}

#[test]
fn int_or_string() {
    let ios = |t: i64, i: i64, s: &str| Enc::new().int(1, t).int(2, i).str(3, s).0;
    assert_eq!(decode_int_or_string(&ios(0, 8080, "")).unwrap(), json!(8080));
    assert_eq!(decode_int_or_string(&ios(0, -1, "")).unwrap(), json!(-1));
    assert_eq!(decode_int_or_string(&ios(1, 0, "http")).unwrap(), json!("http"));
    assert_eq!(decode_int_or_string(&[]).unwrap(), json!(0));
    assert_eq!(decode_int_or_string(&ios(2, 0, "")), Err(ProtoError::IntOrStringType(2)));
}

#[test]
fn bytes_strings_and_managed_fields() {
    assert_eq!(base64(b""), "");
    assert_eq!(base64(b"a"), "YQ==");
    assert_eq!(base64(b"ab"), "YWI=");
    assert_eq!(base64(b"abc"), "YWJj");
    assert_eq!(base64(&[0xfb, 0xff, 0xbf]), "+/+/");
    assert_eq!(go_string(b"ok\xe2\x82A\xff"), "ok\u{fffd}\u{fffd}A\u{fffd}");
    assert_eq!(go_string("héllo".as_bytes()), "héllo");

    let mf = |raw: Option<&[u8]>| {
        let fields = match raw {
            Some(r) => Enc::new().bytes(1, r),
            None => Enc::new(),
        };
        let entry = Enc::new()
            .str(1, "kubectl")
            .str(2, "Apply")
            .str(3, "v1")
            .msg(4, Enc::new().int(1, 60))
            .str(6, "FieldsV1")
            .msg(7, fields);
        Enc::new().msg(1, object_meta("a", "").msg(17, entry))
    };
    let v = dec("v1", "ConfigMap", mf(Some(br#"{"f:data":{}}"#)));
    assert_eq!(
        v["metadata"]["managedFields"],
        json!([{"manager": "kubectl", "operation": "Apply", "apiVersion": "v1",
                "time": "1970-01-01T00:01:00Z", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:data": {}}}])
    );
    assert_eq!(dec("v1", "ConfigMap", mf(None))["metadata"]["managedFields"][0]["fieldsV1"], Value::Null);
    assert!(matches!(err("v1", "ConfigMap", mf(Some(b"{"))), ProtoError::FieldsV1(_)));
    assert!(matches!(err("v1", "ConfigMap", mf(Some(b""))), ProtoError::FieldsV1(_)));
}

#[test]
fn envelope_errors() {
    assert_eq!(decode(b""), Err(ProtoError::EmptyData));
    assert_eq!(decode(b"{\"kind\":1}"), Err(ProtoError::BadPrefix));
    assert_eq!(decode(b"k8s"), Err(ProtoError::BadPrefix));
    assert_eq!(decode(b"k8s\0"), Err(ProtoError::EmptyBody));
    assert_eq!(
        decode(&body("v1", "", Enc::new())),
        Err(ProtoError::MissingKind(r#"runtime.TypeMeta{APIVersion:"v1", Kind:""}"#.into()))
    );
    assert!(matches!(decode(&body("", "ConfigMap", Enc::new())), Err(ProtoError::MissingVersion(_))));
    let e = decode(&body("v1", "Node", Enc::new())).unwrap_err();
    assert_eq!(e, ProtoError::UnsupportedKind { api_version: "v1".into(), kind: "Node".into() });
    assert!(e.to_string().contains("Node"));
    // An empty raw object still decodes to the Go zero value of the kind.
    assert_eq!(
        dec("v1", "ConfigMap", Enc::new()),
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"creationTimestamp": null}})
    );
}

#[test]
fn wire_errors() {
    let cm = |raw: &[u8]| decode(&body("v1", "ConfigMap", Enc::new().raw(raw)));
    // truncated varint, truncated length, truncated fixed64 in an unknown field
    assert_eq!(cm(&[0xa0, 0x06, 0x80]), Err(ProtoError::UnexpectedEof));
    assert_eq!(cm(&[0x0a, 0x05, 0x01]), Err(ProtoError::UnexpectedEof));
    assert_eq!(cm(&[0x99, 0x01, 1, 2]), Err(ProtoError::UnexpectedEof));
    assert_eq!(cm(&[0x80; 11]), Err(ProtoError::IntOverflow));
    let huge = Enc::new().tag(1, LEN).varint(u64::MAX);
    assert_eq!(cm(&huge.0), Err(ProtoError::NegativeLength));
    let big = Enc::new().tag(1, LEN).varint(1 << 40);
    assert_eq!(cm(&big.0), Err(ProtoError::UnexpectedEof));
    assert_eq!(
        cm(&[0x02, 0x00]),
        Err(ProtoError::IllegalTag { message: "ConfigMap".into(), tag: 0, wire: 2 })
    );
    assert_eq!(cm(&[0x0c]), Err(ProtoError::EndGroup("ConfigMap".into())));
    assert_eq!(cm(&[0xaf, 0x06]), Err(ProtoError::IllegalWireType(7)));
    assert_eq!(
        cm(&Enc::new().int(1, 1).0),
        Err(ProtoError::WrongWireType { field: "metadata".into(), wire: 0 })
    );
    assert_eq!(
        cm(&Enc::new().str(4, "yes").0),
        Err(ProtoError::WrongWireType { field: "immutable".into(), wire: 2 })
    );
    let nested = Enc::new().msg(1, Enc::new().int(1, 7));
    assert_eq!(cm(&nested.0), Err(ProtoError::WrongWireType { field: "name".into(), wire: 0 }));
    assert_eq!(decode(&[MAGIC.as_slice(), &[0x12, 0x03, 0x01]].concat()), Err(ProtoError::UnexpectedEof));
    // Go reads the field number as int32: 2^31 is negative.
    let neg = Enc::new().varint(1 << 34);
    assert!(matches!(cm(&neg.0), Err(ProtoError::IllegalTag { tag, .. }) if tag < 0));
}
