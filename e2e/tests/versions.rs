//! Changing an operator's API with the binary, as README's "Changing your API" tells a user
//! to: `examples/cronjob`'s CronTab, first stored in v1, objects written in v1 and read in
//! v2 and back (`kubectl get crontabs.v1.…` and `.v2.…` show the same objects); then the
//! storage version moves to v2 and `ctop run --migrate-storage` rewrites every object and
//! leaves only v2 in the CRD's `status.storedVersions`; then the script drops v1, and the
//! objects written before are all there, unchanged in meaning. The API server converts
//! through the operator's webhook Service, which `ctop sim --webhook-service` maps to the
//! port `ctop run --webhook-port` serves.

mod common;

use std::path::{Path, PathBuf};

use common::examples::{example, stop};
use common::{Kubectl, ctop_run, free_port, start_cluster_with_webhook};

const GROUP: &str = "batch.tutorial.kubebuilder.io";
const CRD: &str = "crontabs.batch.tutorial.kubebuilder.io";

/// `examples/cronjob` copied to `dir/cronjob` with `edit` applied to its script, sharing its
/// `node_modules`.
fn variant(dir: &Path, edit: impl Fn(&str) -> String) -> PathBuf {
    let source = example("cronjob");
    let op = dir.join("cronjob");
    std::fs::create_dir_all(&op).expect("mkdir");
    let script = std::fs::read_to_string(source.join("operator.ct")).expect("read the example");
    std::fs::write(op.join("operator.ct"), edit(&script)).expect("write the variant");
    let modules = op.join("node_modules");
    if !modules.exists() {
        std::os::unix::fs::symlink(source.join("node_modules"), &modules).expect("link node_modules");
    }
    op
}

/// The example with v1 as the storage version (the state before the migration).
fn stored_in_v1(script: &str) -> String {
    let marker = "cronTab.addVersion(\"v1\", {\n";
    assert!(script.contains(marker), "the example declares v1 with addVersion");
    script.replace(marker, &format!("{marker}  storage: true,\n"))
}

/// The example without v1 (the state after it was dropped).
fn without_v1(script: &str) -> String {
    let start = script.find("cronTab.addVersion(\"v1\", {").expect("the example declares v1");
    let end = start + script[start..].find("\n});\n").expect("the end of the declaration") + "\n});\n".len();
    format!("{}{}", &script[..start], &script[end..])
}

/// A suspended CronTab in v1 (nothing runs: the objects only have to survive).
fn crontab_v1(name: &str, schedule: &str) -> String {
    format!(
        "apiVersion: {GROUP}/v1\nkind: CronTab\nmetadata:\n  name: {name}\nspec:\n  schedule: \"{schedule}\"\n  \
         suspend: true\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          containers: \
         [{{name: hello, image: busybox}}]\n          restartPolicy: OnFailure\n"
    )
}

fn schedule(k: &Kubectl, version: &str, name: &str, path: &str) -> String {
    k.ok(&["get", &format!("crontabs.{version}.{GROUP}"), name, "-o", &format!("jsonpath={path}")])
}

#[test]
fn objects_written_in_v1_survive_a_storage_migration_and_the_drop_of_v1() {
    assert!(
        example("cronjob").join("node_modules/cron-parser").is_dir(),
        "the cronjob example imports npm packages: run `npm ci --prefix examples/cronjob` (scripts/test.sh does)"
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let port = free_port();
    let (_sim, kubeconfig) = start_cluster_with_webhook(dir.path(), "default/cronjob-webhook", port);
    let k = Kubectl { kubeconfig: kubeconfig.clone(), cache: dir.path().join("cache") };
    let flags = ["--webhook-port", &port.to_string(), "--name", "cronjob"];
    let schedules = [("a", "0 3 * * *"), ("b", "*/5 * * * 1-5"), ("c", "@daily"), ("d", "0 12 1 * * extra")];

    // 1. v1 stored: objects written in v1 read in v2 with their schedule as fields, and back.
    let op = variant(dir.path(), stored_in_v1);
    let run = ctop_run(&op, &kubeconfig, &flags, "ctop-run-v1-stored.log");
    for (name, s) in schedules {
        let path = dir.path().join(format!("{name}.yaml"));
        std::fs::write(&path, crontab_v1(name, s)).expect("write");
        k.eventually(&["apply", "-f", path.to_str().expect("utf-8")], |out| out.contains(name));
    }
    k.eventually(&["get", "crd", CRD, "-o", "jsonpath={.status.storedVersions}"], |s| s == r#"["v1"]"#);
    assert_eq!(schedule(&k, "v2", "a", "{.spec.schedule.minute} {.spec.schedule.hour}"), "0 3");
    assert_eq!(schedule(&k, "v2", "c", "{.spec.schedule.minute}"), "@daily");
    assert_eq!(schedule(&k, "v2", "d", "{.spec.schedule.dayOfWeek}"), "* extra");
    let listed = |version: &str| {
        k.ok(&["get", &format!("crontabs.{version}.{GROUP}"), "-o", "jsonpath={.items[*].metadata.name}"])
    };
    assert_eq!(listed("v1"), "a b c d");
    assert_eq!(listed("v2"), "a b c d", "both versions list the same objects");
    // A deprecated version says so to kubectl, and shows its own columns.
    let out = k.run(&["get", &format!("crontabs.v1.{GROUP}"), "a"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("v1 CronTab is deprecated"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("SCHEDULE") && table.contains("0 3 * * *"), "{table}");
    let table = k.ok(&["get", &format!("crontabs.v2.{GROUP}"), "a"]);
    assert!(table.contains("MINUTE") && table.contains("HOUR"), "{table}");
    stop(run);

    // 2. The example as it is (v2 stored), with the migration on: every object is rewritten
    //    in v2 and v1 leaves status.storedVersions.
    let migrate = ["--webhook-port", &port.to_string(), "--name", "cronjob", "--migrate-storage"];
    let run = ctop_run(&example("cronjob"), &kubeconfig, &migrate, "ctop-run-migrate.log");
    k.eventually(&["get", "crd", CRD, "-o", "jsonpath={.status.storedVersions}"], |s| s == r#"["v2"]"#);
    k.eventually(
        &["get", "controllerstatuses", "-A", "-o", "jsonpath={.items[*].status.storageMigration.phase}"],
        |s| s.contains("Done"),
    );
    for (name, s) in schedules {
        assert_eq!(schedule(&k, "v1", name, "{.spec.schedule}"), s, "{name} reads the same in v1");
    }
    stop(run);

    // 3. v1 dropped: the API server takes the CRD without it, and every object is there.
    let op = variant(&dir.path().join("dropped"), without_v1);
    let run = ctop_run(&op, &kubeconfig, &flags, "ctop-run-v1-dropped.log");
    k.eventually(&["get", "crd", CRD, "-o", "jsonpath={.spec.versions[*].name}"], |s| s == "v2");
    assert_eq!(listed("v2"), "a b c d");
    // Every object was rewritten in v2 before v1 left storedVersions: each has its fields.
    let fields = k.ok(&[
        "get",
        &format!("crontabs.v2.{GROUP}"),
        "-o",
        "jsonpath={range .items[*]}{.metadata.name}={.spec.schedule.minute}/{.spec.schedule.dayOfWeek};{end}",
    ]);
    if fields != "a=0/*;b=*/5/1-5;c=@daily/;d=0/* extra;" {
        let objects = k.ok(&["get", &format!("crontabs.v2.{GROUP}"), "-o", "yaml", "--show-managed-fields"]);
        panic!("an object is not stored in v2 with its schedule's fields: {fields}\n{objects}");
    }
    let gone = k.run(&["get", &format!("crontabs.v1.{GROUP}"), "a"]);
    assert!(!gone.status.success(), "v1 is no longer served");
    stop(run);
}
