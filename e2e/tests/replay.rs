//! Upgrading without fear, through the binary: `ctop dev examples/webapp --record FILE`
//! while two WebApps converge, stopped with SIGTERM; `ctop replay FILE` reproduces every
//! recorded call with the recorded script (exit 0); `ctop replay FILE --script v2` on a copy
//! that drops the Service reports the prune on both WebApps (exit 1, JSON), and on a copy
//! that throws on one WebApp names it (exit 2).

mod common;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::{Kubectl, Proc};
use ctop_e2e::binary;

fn replay(dir: &Path, args: &[&str]) -> Output {
    Command::new(binary::ctop()).arg("replay").args(args).current_dir(dir).output().expect("ctop replay runs")
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// A copy of examples/webapp's script in `dir/name`, with `edit` applied.
fn version(dir: &Path, name: &str, edit: impl FnOnce(&str) -> String) -> String {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/webapp/operator.ct");
    let source = std::fs::read_to_string(example).expect("the example's script");
    let edited = edit(&source);
    assert_ne!(edited, source, "the edit changed nothing");
    let to = dir.join(name);
    std::fs::create_dir_all(&to).expect("mkdir");
    std::fs::write(to.join("operator.ct"), edited).expect("write");
    to.to_string_lossy().into_owned()
}

#[test]
fn a_recording_of_ctop_dev_replays_and_a_new_version_is_reported() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/webapp");
    let stderr = tmp.path().join("stderr");
    let mut dev = Proc(
        Command::new(binary::ctop())
            .arg("dev")
            .arg(&example)
            .args(["--record", "webapp.ctrec", "--pod-start", "100ms"])
            .current_dir(tmp.path())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&stderr).expect("stderr file"))
            .stdin(Stdio::null())
            .spawn()
            .expect("ctop dev starts"),
    );
    let kubeconfig = tmp.path().join(".ctop/dev/kubeconfig");
    common::wait_for(&kubeconfig);
    let k = Kubectl { kubeconfig, cache: tmp.path().join("cache") };
    k.eventually(&["get", "webapp", "shop"], |_| true);
    let second = "apiVersion: apps.example.com/v1\nkind: WebApp\nmetadata: {name: broken}\nspec: {image: nginx, replicas: 1, port: 80}\n";
    std::fs::write(tmp.path().join("broken.yaml"), second).expect("write");
    k.ok(&["apply", "-f", &tmp.path().join("broken.yaml").to_string_lossy()]);
    for name in ["shop", "broken"] {
        let waited = k.run(&["wait", "--for=condition=Ready", &format!("webapp/{name}"), "--timeout=60s"]);
        assert!(waited.status.success(), "kubectl wait {name}: {}", text(&waited));
    }

    // SIGTERM: the recording is closed with the operator.
    let status = common::terminate(&mut dev);
    let log = std::fs::read_to_string(&stderr).unwrap_or_default();
    assert!(status.success(), "ctop dev exited with {status}:\n{log}");
    assert!(log.contains("recording closed"), "{log}");

    // The recorded script reproduces every call.
    let same = replay(tmp.path(), &["webapp.ctrec"]);
    let printed = text(&same);
    assert_eq!(same.status.code(), Some(0), "{printed}");
    let line = printed.lines().find(|l| l.trim_start().starts_with("all ")).unwrap_or_default();
    assert!(line.trim().ends_with("calls identical"), "{printed}");

    // v2 drops the Service: both WebApps would lose theirs.
    let v2 = version(tmp.path(), "v2", |s| {
        let start = s.find("    apply(Service({").expect("the Service");
        let end = start + s[start..].find("}));\n").expect("its end") + 5;
        format!("{}{}", &s[..start], &s[end..])
    });
    let out = replay(tmp.path(), &["webapp.ctrec", "--script", &v2, "--output", "json"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    let summary: Vec<&str> =
        report["summary"].as_array().expect("summary").iter().filter_map(serde_json::Value::as_str).collect();
    assert!(summary.iter().any(|l| l.ends_with("prunes v1/Service on 2 of 2 WebApps")), "{summary:?}");
    let objects: Vec<&str> =
        report["objects"].as_array().expect("objects").iter().filter_map(|o| o["object"].as_str()).collect();
    assert!(objects.contains(&"default/shop") && objects.contains(&"default/broken"), "{objects:?}");
    assert_eq!(report["exit"], "differences");

    // v3 throws on one WebApp: the new failure is named, the exit code says so.
    let v3 = version(tmp.path(), "v3", |s| {
        s.replacen(
            "const name = cr.metadata.name;",
            "const name = cr.metadata.name;\n    if (name === \"broken\") throw new Error(\"broken on purpose\");",
            1,
        )
    });
    let out = replay(tmp.path(), &["webapp.ctrec", "--script", &v3]);
    let printed = text(&out);
    assert_eq!(out.status.code(), Some(2), "{printed}");
    assert!(printed.contains("1 object now fails: WebApp default/broken"), "{printed}");
    assert!(printed.contains("broken on purpose"), "{printed}");
}
