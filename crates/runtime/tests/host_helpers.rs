//! The SDK helpers that need the host, in real QuickJS: `cron(...)` schedules in time zones,
//! `stringData(secret)`, and `health(obj)`.

use ctop_runtime::{Limits, Script, ScriptError};
use serde_json::{Value, json};

fn script(source: &str) -> Result<Script, ScriptError> {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("operator.ct"), source).expect("write");
    Script::from_dir(dir.path(), "operator.ct", 1, Limits::default())
}

/// Runs `body` inside a reconcile of a minimal operator and returns what it put in
/// `setStatus(cr, { out })`.
fn reconcile_with(body: &str) -> Value {
    let source = format!(
        r#"import {{ resource, operator, setStatus, cron, stringData, health, Secret }} from "ctop";
const app = resource("apps.example.com/v1", "App", {{}});
operator(app).reconcile((cr) => {{
  const out = (() => {{ {body} }})();
  setStatus(cr, {{ out }});
}});
"#
    );
    let s = script(&source).expect("the script loads");
    let input = json!({
        "object": {"apiVersion": "apps.example.com/v1", "kind": "App",
                   "metadata": {"name": "a", "namespace": "prod", "uid": "u-1", "generation": 1}, "spec": {}},
        "observed": {}, "env": {}, "values": {}
    });
    let out = s.dispatch("reconcile", 0, &input.to_string()).expect("reconcile");
    out["status"]["out"].clone()
}

#[test]
fn cron_gives_next_and_missed_runs_in_a_time_zone() {
    let out = reconcile_with(
        r#"const s = cron("30 9 * * MON-FRI", { timeZone: "America/New_York" });
           const utc = cron("*/15 * * * *");
           return {
             next: s.next("2026-11-28T12:00:00Z").toISOString(),
             nextFromDate: s.next(new Date(Date.parse("2026-11-30T14:30:00Z"))).toISOString(),
             zone: s.timeZone,
             missed: utc.between("2026-01-01T10:00:00Z", Date.parse("2026-01-01T11:00:00Z")).map((d) => d.toISOString()),
             capped: utc.between("2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z", { limit: 2 }).length,
             never: cron("0 0 30 2 *").next("2026-01-01T00:00:00Z") === undefined,
           };"#,
    );
    assert_eq!(
        out,
        json!({
            "next": "2026-11-30T14:30:00.000Z",
            "nextFromDate": "2026-12-01T14:30:00.000Z",
            "zone": "America/New_York",
            "missed": ["2026-01-01T10:15:00.000Z", "2026-01-01T10:30:00.000Z",
                       "2026-01-01T10:45:00.000Z", "2026-01-01T11:00:00.000Z"],
            "capped": 2,
            "never": true,
        })
    );
}

#[test]
fn cron_refuses_bad_schedules_zones_and_times_with_a_clear_error() {
    let out = reconcile_with(
        r#"const msg = (f) => { try { f(); return "no error"; } catch (e) { return `${e.name}: ${e.message}`; } };
           return {
             fields: msg(() => cron("* * *")).startsWith('TypeError: invalid cron schedule "* * *": '),
             zone: msg(() => cron("* * * * *", { timeZone: "Mars/Olympus" })),
             time: msg(() => cron("* * * * *").next("yesterday")),
           };"#,
    );
    assert_eq!(
        out,
        json!({
            "fields": true,
            "zone": "TypeError: unknown time zone \"Mars/Olympus\": use an IANA name such as \"Europe/Berlin\" or \"UTC\"",
            "time": "TypeError: cron next: expected a time (ms since the epoch, a Date or an RFC 3339 string), got yesterday",
        })
    );
}

#[test]
fn string_data_decodes_what_the_api_server_returns() {
    let out = reconcile_with(
        r#"const stored = { apiVersion: "v1", kind: "Secret", metadata: { name: "creds" },
                           data: { user: "YWRtaW4=", pw: "cMOkc3M=" } };
           let bad;
           try { stringData({ metadata: { name: "x" }, data: { k: "%%%" } }); } catch (e) { bad = e.message; }
           let binary;
           try { stringData({ metadata: { name: "x" }, data: { k: "/w==" } }); } catch (e) { binary = e.message; }
           return { text: stringData(stored), built: stringData(Secret({ metadata: { name: "n" }, stringData: { a: "b" } })),
                    bad: bad.startsWith("stringData: data.k of x: not base64"), binary };"#,
    );
    assert_eq!(
        out,
        json!({
            "text": {"user": "admin", "pw": "päss"},
            "built": {"a": "b"},
            "bad": true,
            "binary": "stringData: data.k of x: the decoded bytes are not UTF-8 text; read the base64 `data` field instead",
        })
    );
}

#[test]
fn health_judges_objects_by_kstatus_rules() {
    let out = reconcile_with(
        r#"const shop = { apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "shop", generation: 2 },
                         spec: { replicas: 2 }, status: { observedGeneration: 2, replicas: 2, updatedReplicas: 2,
                                                          readyReplicas: 1, availableReplicas: 1 } };
           const pod = (phase, ready) => ({ apiVersion: "v1", kind: "Pod", metadata: { name: "shop-1" },
                                            status: { phase, conditions: [{ type: "Ready", status: ready }] } });
           return {
             deployment: health(shop),
             running: health(pod("Running", "True")),
             starting: health(pod("Running", "False")),
             missing: health(undefined),
             malformed: health({ apiVersion: "v1", kind: "Pod", status: { phase: 1 } }),
             noKind: health({ metadata: { name: "x" } }),
           };"#,
    );
    let h = |status: &str, reason: &str, message: &str| json!({"status": status, "reason": reason, "message": message});
    assert_eq!(
        out,
        json!({
            "deployment": h("InProgress", "ReplicasUnavailable", "1 of 2 replicas available"),
            "running": h("Current", "PodReady", "running and ready"),
            "starting": h("InProgress", "PodNotReady", "running but not ready"),
            "missing": h("NotFound", "NotFound", "not found"),
            "malformed": h("Unknown", "MalformedField", "status.phase is not a string"),
            "noKind": h("Unknown", "InvalidObject", "the object has no apiVersion"),
        })
    );
}

#[test]
fn health_refuses_what_is_not_an_object_with_a_clear_error() {
    let out = reconcile_with(
        r#"const msg = (f) => { try { f(); return "no error"; } catch (e) { return `${e.name}: ${e.message}`; } };
           const host = globalThis.__ct_host;
           return {
             name: msg(() => health("shop")),
             list: msg(() => health([])),
             notJson: msg(() => host.health("{")).startsWith("TypeError: health(obj): not a JSON object: "),
             huge: msg(() => host.health(`"${"x".repeat(7 << 20)}"`)),
           };"#,
    );
    assert_eq!(
        out,
        json!({
            "name": "TypeError: health(obj): expected a Kubernetes object (with apiVersion and kind), got string",
            "list": "TypeError: health(obj): expected a Kubernetes object (with apiVersion and kind), got array",
            "notJson": true,
            "huge": "RangeError: health(obj): the object's JSON is 7340034 bytes, more than the 6291456 read",
        })
    );
}
