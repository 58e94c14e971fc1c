//! Built-in kinds through kubectl: `explain` from the served OpenAPI schemas, and writes
//! refused by the decoder (wrong types, unknown fields under each `fieldValidation`).

use super::*;

#[tokio::test(flavor = "multi_thread")]
async fn explain_builtin() {
    let env = Env::start().await;
    let out = env.ok(&["explain", "deployment.spec.replicas"]);
    assert!(out.contains("KIND:       Deployment"), "{out}");
    assert!(out.contains("FIELD: replicas <integer>"), "{out}");

    // A nested object, through a reference to another schema.
    let out = env.ok(&["explain", "deployment.spec.template"]);
    assert!(out.starts_with("GROUP:      apps\nKIND:       Deployment\nVERSION:    v1\n"), "{out}");
    assert!(out.contains("FIELD: template <PodTemplateSpec>"), "{out}");
    assert!(out.lines().any(|l| l.split_whitespace().eq(["spec", "<PodSpec>"])), "{out}");

    // A list of objects, and a field of its items.
    let out = env.ok(&["explain", "pod.spec.containers"]);
    assert!(out.contains("FIELD: containers <[]Container>"), "{out}");
    assert!(out.lines().any(|l| l.split_whitespace().eq(["name", "<string>", "-required-"])), "{out}");
    assert!(out.lines().any(|l| l.split_whitespace().eq(["env", "<[]EnvVar>"])), "{out}");
    let out = env.ok(&["explain", "deployment.spec.template.spec.containers.env.value"]);
    assert!(out.contains("FIELD: value <string>"), "{out}");
    let out = env.fails(&["explain", "deployment.spec.replica"]);
    assert_eq!(out, "error: field \"replica\" does not exist\n");
}

/// A Deployment with `field: value` added under `spec`, or in its container with
/// `container: true`.
fn deployment_with(field: &str, container: bool) -> String {
    let (anchor, indent) =
        if container { ("        image: nginx:1.0\n", "        ") } else { ("  replicas: 1\n", "  ") };
    DEPLOYMENT.replacen(anchor, &format!("{anchor}{indent}{field}\n"), 1)
}

#[tokio::test(flavor = "multi_thread")]
async fn builtin_wrong_types_are_refused_by_the_decoder() {
    let env = Env::start().await;
    let cases = [
        (
            deployment_with("imagePullPolicy: 5", true),
            "json: cannot unmarshal number into Go struct field Container.spec.template.spec.containers.imagePullPolicy of type v1.PullPolicy",
        ),
        (
            DEPLOYMENT.replace("        env:\n        - {name: A, value: \"1\"}", "        env:\n        - {name: A, value: true}"),
            "json: cannot unmarshal bool into Go struct field EnvVar.spec.template.spec.containers.env.value of type string",
        ),
        (
            DEPLOYMENT.replace("  replicas: 1\n", "  replicas: \"3\"\n"),
            "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32",
        ),
        (
            deployment_with("paused: \"no\"", false),
            "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.paused of type bool",
        ),
        (
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: oops}\nspec:\n  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: b}}\n    spec: {containers: oops}\n".to_owned(),
            "json: cannot unmarshal string into Go struct field PodSpec.spec.template.spec.containers of type []v1.Container",
        ),
    ];
    for (yaml, error) in cases {
        let out = env.run_stdin(&["create", "-f", "-"], &yaml);
        assert_eq!(
            out.stderr,
            format!(
                "Error from server (BadRequest): error when creating \"STDIN\": Deployment in version \"v1\" cannot be handled as a Deployment: {error}\n"
            )
        );
    }
    let secret = "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {key: not-base64}\n";
    let out = env.run_stdin(&["create", "-f", "-"], secret);
    assert_eq!(
        out.stderr,
        "Error from server (BadRequest): error when creating \"STDIN\": Secret in version \"v1\" cannot be handled as a Secret: illegal base64 data at input byte 3\n"
    );
    assert!(env.get(&["deployments"]).is_none_or(|l| l["items"].as_array().is_some_and(Vec::is_empty)));

    // Patches of a stored object: the 422 for the field `patch`, which kubectl words as
    // an invalid request.
    env.apply(DEPLOYMENT, &[]);
    let out = env.run(&["patch", "deployment", "web", "-p", r#"{"spec":{"replicas":1.5}}"#]);
    assert_eq!(
        out.stderr,
        "The request is invalid: patch: Invalid value: \"map[spec:map[replicas:1.5]]\": cannot convert float64 to int32\n"
    );
    let out = env.run(&["patch", "deployment", "web", "--type=merge", "-p", r#"{"spec":{"paused":"no"}}"#]);
    assert!(
        out.stderr.starts_with(
            "The request is invalid: patch: Invalid value: \"{\\\"apiVersion\\\":\\\"apps/v1\\\","
        ),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.ends_with(
            "\": json: cannot unmarshal string into Go struct field DeploymentSpec.spec.paused of type bool\n"
        ),
        "{}",
        out.stderr
    );

    // Server-side apply: structured-merge-diff's words, whatever the validation mode.
    let out = env.run_stdin(
        &["apply", "--server-side", "--validate=false", "-f", "-"],
        &deployment_with("paused: \"no\"", false),
    );
    assert_eq!(
        out.stderr,
        "Error from server: failed to create typed patch object (default/web; apps/v1, Kind=Deployment): .spec.paused: expected boolean, got &{no}\n"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn builtin_unknown_fields_follow_field_validation() {
    let env = Env::start().await;
    let with_replica = deployment_with("replica: 2", false);

    // Strict (kubectl's default): refused by the decoder.
    let out = env.run_stdin(&["create", "-f", "-"], &with_replica);
    assert_eq!(
        out.stderr,
        "Error from server (BadRequest): error when creating \"STDIN\": Deployment in version \"v1\" cannot be handled as a Deployment: strict decoding error: unknown field \"spec.replica\"\n"
    );
    let in_container = deployment_with("foo: bar", true);
    let out = env.run_stdin(&["create", "-f", "-"], &in_container);
    assert!(
        out.stderr
            .ends_with("strict decoding error: unknown field \"spec.template.spec.containers[0].foo\"\n"),
        "{}",
        out.stderr
    );

    // Warn: kubectl shows the server's warning; the field is not stored.
    let out = env.run_stdin(&["create", "--validate=warn", "-f", "-"], &with_replica);
    assert!(out.ok(), "{}", out.stderr);
    assert_eq!(out.stderr, "Warning: unknown field \"spec.replica\"\n");
    let d = env.get(&["deployment", "web"]).expect("created");
    assert!(d["spec"].get("replica").is_none(), "{d}");

    // Ignore: nothing said, nothing stored.
    let out = env.run_stdin(&["replace", "--validate=false", "-f", "-"], &in_container);
    assert!(out.ok(), "{}", out.stderr);
    assert_eq!(out.stderr, "");
    let d = env.get(&["deployment", "web"]).expect("replaced");
    assert!(container(&d, "app").get("foo").is_none(), "{d}");

    // Client-side apply of the stored object sends a strategic merge patch: the
    // converter's strict error, for the field `patch` with the patch as Go prints it.
    env.ok(&["annotate", "deployment", "web", "note=x"]);
    let out = env.run(&["patch", "deployment", "web", "--type=strategic", "-p", r#"{"spec":{"replica":2}}"#]);
    assert!(out.ok(), "the default is Warn: {}", out.stderr);
    assert_eq!(out.stderr, "Warning: unknown field \"spec.replica\"\n");
    let out = env.run_stdin(&["apply", "-f", "-"], &with_replica);
    // (After kubectl's warning that the object was not created by `kubectl apply`.)
    let error = out.stderr.split_once("\nThe request").map(|(_, e)| e).unwrap_or_default();
    assert!(
        error.starts_with(" is invalid: patch: Invalid value: \"map[metadata:map[annotations:map[kubectl.kubernetes.io/last-applied-configuration:"),
        "{}",
        out.stderr
    );
    assert!(
        error.ends_with(" spec:map[replica:2]]\": strict decoding error: unknown field \"spec.replica\"\n"),
        "{}",
        out.stderr
    );

    // Server-side apply refuses undeclared fields in every mode.
    let out = env.run_stdin(&["apply", "--server-side", "--validate=false", "-f", "-"], &with_replica);
    assert_eq!(
        out.stderr,
        "Error from server: failed to create typed patch object (default/web; apps/v1, Kind=Deployment): .spec.replica: field not declared in schema\n"
    );
}

/// What the API server's validation of built-in kinds refuses (`pkg/apis/*/validation`),
/// as kubectl prints it: the field path and the words of `field.Error`.
#[tokio::test(flavor = "multi_thread")]
async fn builtin_objects_are_validated_like_the_api_server() {
    let env = Env::start().await;
    // pkg/apis/core/validation validateServicePort: field.Invalid(port, InclusiveRangeError(1,
    // 65535)); the targetPort defaulted to the port (SetDefaults_Service) fails the same way.
    let service = "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec:\n  selector: {app: web}\n  ports: [{port: 0}]\n";
    let out = env.run_stdin(&["create", "-f", "-"], service);
    assert_eq!(
        out.stderr,
        "The Service \"web\" is invalid: \n\
         * spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive\n\
         * spec.ports[0].targetPort: Invalid value: 0: must be between 1 and 65535, inclusive\n"
    );
    // pkg/apis/core/validation validateContainers: field.Required(name, "").
    let nameless = DEPLOYMENT
        .replace("      - name: sidecar\n        image: busybox:1.0\n", "      - image: busybox:1.0\n");
    let out = env.run_stdin(&["create", "-f", "-"], &nameless);
    assert_eq!(
        out.stderr,
        "The Deployment \"web\" is invalid: spec.template.spec.containers[1].name: Required value\n"
    );
    // pkg/apis/apps/validation ValidateDeploymentUpdate: the selector is immutable
    // (apimachinery ValidateImmutableField: "field is immutable").
    assert!(env.run_stdin(&["create", "-f", "-"], DEPLOYMENT).ok());
    let moved = DEPLOYMENT
        .replace("    matchLabels: {app: web}", "    matchLabels: {app: web, tier: a}")
        .replace("      labels: {app: web}", "      labels: {app: web, tier: a}");
    let out = env.run_stdin(&["replace", "-f", "-"], &moved);
    assert!(
        out.stderr.starts_with("The Deployment \"web\" is invalid: spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"web\", \"tier\":\"a\"}")
            && out.stderr.ends_with(": field is immutable\n"),
        "{}",
        out.stderr
    );
}
