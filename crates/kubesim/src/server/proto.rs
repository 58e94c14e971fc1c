//! Decoder for Kubernetes protobuf request bodies (`application/vnd.kubernetes.protobuf`).
//!
//! kubectl's typed clientset (`kubectl create configmap|secret|deployment|token|...`,
//! `kubectl auth can-i|whoami`) sends built-in kinds as protobuf instead of JSON. This module
//! turns such a body into the JSON object the same Go struct would marshal to, so kubesim can
//! treat it exactly like a JSON request. Start at [`decode`].
//!
//! Wire format: the 4-byte magic `k8s\0`, then a `runtime.Unknown` message
//! (`1: typeMeta{1: apiVersion, 2: kind}`, `2: raw`, `3: contentEncoding`, `4: contentType`);
//! `raw` holds the object message selected by apiVersion + kind.
//!
//! The decoder is a small hand-written protobuf reader driven by [`MESSAGES`], a table of the
//! messages reachable from the supported kinds. The table was extracted from kubectl 1.32
//! itself: field numbers from the `generated.proto` descriptors embedded in the binary, JSON
//! names, `omitempty` and pointer-ness from the Go struct tags/types. The output follows Go
//! `encoding/json` over the decoded struct:
//! - value scalars (`string`, `int32`, `bool`, ...) are always on the wire; a zero value is
//!   dropped when the field is `omitempty` and emitted (`""`, `0`, `false`) otherwise;
//! - pointers, slices, maps and `[]byte` that are absent become `null` unless `omitempty`;
//!   a pointer that is present keeps its value even when zero (`replicas: 0`);
//! - value structs are always emitted (`"metadata": {"creationTimestamp": null}`,
//!   `"resources": {}`, `"status": {}`), inline structs are merged into their parent;
//! - `Time` → RFC 3339 seconds (`null` when zero), `MicroTime` → RFC 3339 with microseconds,
//!   `Quantity` → its string (`"0"` when empty), `IntOrString` → number or string,
//!   `[]byte` → standard base64, `FieldsV1` → its raw JSON, `map<string,..>` entries → object.
//!
//! Unknown field numbers are skipped, as the generated Go unmarshallers do. Use [`supports`]
//! to ask whether an apiVersion/kind can be decoded; [`decode`] answers
//! [`ProtoError::UnsupportedKind`] otherwise.

use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::OnceLock;

/// The request `Content-Type` of Kubernetes protobuf bodies.
pub const CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// The magic prefix of every Kubernetes protobuf body.
pub const MAGIC: &[u8; 4] = b"k8s\0";

/// Why a protobuf body could not be decoded. Messages follow the apiserver's where it has one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtoError {
    /// The body is empty.
    #[error("empty data")]
    EmptyData,
    /// The body does not start with the `k8s\0` magic.
    #[error("provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]")]
    BadPrefix,
    /// The body is only the magic, with no `runtime.Unknown` after it.
    #[error("empty body")]
    EmptyBody,
    /// The envelope's `typeMeta.kind` is empty.
    #[error("Object 'Kind' is missing in '{0}'")]
    MissingKind(String),
    /// The envelope's `typeMeta.apiVersion` is empty.
    #[error("Object 'apiVersion' is missing in '{0}'")]
    MissingVersion(String),
    /// apiVersion/kind is not one this decoder has a message description for (answer 415).
    #[error("protobuf is not supported for kind {kind:?} in {api_version:?}, send JSON instead")]
    UnsupportedKind {
        /// `apiVersion` from the envelope.
        api_version: String,
        /// `kind` from the envelope.
        kind: String,
    },
    /// The input ended inside a varint, length-delimited field or fixed-width value.
    #[error("unexpected EOF")]
    UnexpectedEof,
    /// A varint is longer than 10 bytes.
    #[error("proto: integer overflow")]
    IntOverflow,
    /// A length prefix does not fit in a signed 64-bit integer.
    #[error("proto: negative length found during unmarshaling")]
    NegativeLength,
    /// A field tag has number 0 (or one that is negative as Go's int32).
    #[error("proto: {message}: illegal tag {tag} (wire type {wire})")]
    IllegalTag {
        /// Message being decoded.
        message: String,
        /// Field number as Go reads it.
        tag: i64,
        /// Wire type of the tag.
        wire: u8,
    },
    /// An end-group marker appears where a field is expected.
    #[error("proto: {0}: wiretype end group for non-group")]
    EndGroup(String),
    /// An unknown field uses wire type 6 or 7.
    #[error("proto: illegal wireType {0}")]
    IllegalWireType(u8),
    /// A known field arrives with a wire type that does not match its declared type.
    #[error("proto: wrong wireType = {wire} for field {field}")]
    WrongWireType {
        /// JSON name of the field.
        field: String,
        /// Wire type found.
        wire: u8,
    },
    /// A `resource.Quantity` string does not have the quantity syntax.
    #[error("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")]
    QuantityFormat(String),
    /// A `resource.Quantity` string has an unknown suffix (e.g. `1Qi`).
    #[error("unable to parse quantity's suffix")]
    QuantitySuffix(String),
    /// An `IntOrString` has a `type` other than 0 (int) or 1 (string).
    #[error("impossible IntOrString.Type")]
    IntOrStringType(i64),
    /// A `FieldsV1` (managedFields) payload is not valid JSON.
    #[error("invalid FieldsV1 JSON: {0}")]
    FieldsV1(String),
    /// A `Time` or `MicroTime` outside jiff's range (about the years -9999 to 9999). Go
    /// formats any year; kubesim formats times with `jiff`, and no client sends such a time.
    #[error("time out of range: {seconds}s {nanos}ns since the Unix epoch")]
    TimeOutOfRange {
        /// `Timestamp.seconds`.
        seconds: i64,
        /// `Timestamp.nanos`.
        nanos: i32,
    },
    /// The built-in message table is inconsistent (a bug in this module, not in the input).
    #[error("protobuf message table: {0}")]
    Table(String),
}

/// Decode a protobuf request body: the 4-byte magic `k8s\0`, then
/// `runtime.Unknown{typeMeta{apiVersion,kind}, raw, contentEncoding, contentType}`, then the
/// message in `raw` by kind.
///
/// The result is the JSON object Go would marshal for the decoded struct, with `apiVersion`
/// and `kind` taken from the envelope.
pub fn decode(body: &[u8]) -> Result<Value, ProtoError> {
    if body.is_empty() {
        return Err(ProtoError::EmptyData);
    }
    let Some(data) = body.strip_prefix(MAGIC.as_slice()) else {
        return Err(ProtoError::BadPrefix);
    };
    if data.is_empty() {
        return Err(ProtoError::EmptyBody);
    }
    let unknown = Unknown::decode(data)?;
    let meta =
        || format!("runtime.TypeMeta{{APIVersion:{:?}, Kind:{:?}}}", unknown.api_version, unknown.kind);
    if unknown.kind.is_empty() {
        return Err(ProtoError::MissingKind(meta()));
    }
    if unknown.api_version.is_empty() {
        return Err(ProtoError::MissingVersion(meta()));
    }
    let root = root_message(&unknown.api_version, &unknown.kind).ok_or_else(|| {
        ProtoError::UnsupportedKind { api_version: unknown.api_version.clone(), kind: unknown.kind.clone() }
    })?;
    let schema = schema()?;
    let mut obj = Map::new();
    decode_message(schema, root, unknown.raw, &mut obj)?;
    finalize(schema, root, &mut obj)?;
    obj.insert("apiVersion".into(), Value::String(unknown.api_version));
    obj.insert("kind".into(), Value::String(unknown.kind));
    Ok(Value::Object(obj))
}

/// Whether this decoder can decode `kind` in `api_version` (e.g. `"apps/v1"`, `"Deployment"`).
#[cfg(test)]
pub fn supports(api_version: &str, kind: &str) -> bool {
    root_message(api_version, kind).is_some()
}

/// apiVersion → message-table prefix for the group versions in [`MESSAGES`].
const GROUP_VERSIONS: &[(&str, &str)] = &[
    ("v1", "core"),
    ("apps/v1", "apps"),
    ("batch/v1", "batch"),
    ("rbac.authorization.k8s.io/v1", "rbac"),
    ("networking.k8s.io/v1", "net"),
    ("policy/v1", "policy"),
    ("scheduling.k8s.io/v1", "sched"),
    ("authentication.k8s.io/v1", "authn"),
    ("authorization.k8s.io/v1", "authz"),
    ("autoscaling/v1", "autoscaling"),
    ("certificates.k8s.io/v1", "certs"),
    ("coordination.k8s.io/v1", "coord"),
];

/// Top-level kinds that may appear in the envelope (the message is `<prefix>.<kind>`).
const ROOTS: &[&str] = &[
    "core.Binding",
    "core.ConfigMap",
    "core.Endpoints",
    "core.LimitRange",
    "core.Namespace",
    "core.PersistentVolumeClaim",
    "core.Pod",
    "core.PodTemplate",
    "core.ReplicationController",
    "core.ResourceQuota",
    "core.Secret",
    "core.Service",
    "core.ServiceAccount",
    "apps.DaemonSet",
    "apps.Deployment",
    "apps.ReplicaSet",
    "apps.StatefulSet",
    "batch.CronJob",
    "batch.Job",
    "rbac.ClusterRole",
    "rbac.ClusterRoleBinding",
    "rbac.Role",
    "rbac.RoleBinding",
    "net.Ingress",
    "net.IngressClass",
    "net.NetworkPolicy",
    "policy.Eviction",
    "policy.PodDisruptionBudget",
    "sched.PriorityClass",
    "authn.SelfSubjectReview",
    "authn.TokenRequest",
    "authn.TokenReview",
    "authz.SelfSubjectAccessReview",
    "authz.SelfSubjectRulesReview",
    "authz.SubjectAccessReview",
    "autoscaling.HorizontalPodAutoscaler",
    "autoscaling.Scale",
    "certs.CertificateSigningRequest",
    "coord.Lease",
];

/// Find the table message for an envelope's apiVersion/kind. `DeleteOptions` is registered in
/// every group version (client-go encodes it with the resource's group version).
fn root_message(api_version: &str, kind: &str) -> Option<&'static str> {
    if kind == "DeleteOptions" {
        return Some("meta.DeleteOptions");
    }
    let (_, prefix) = GROUP_VERSIONS.iter().find(|(gv, _)| *gv == api_version)?;
    ROOTS.iter().copied().find(|name| {
        name.strip_prefix(prefix).and_then(|rest| rest.strip_prefix('.')).is_some_and(|k| k == kind)
    })
}

/// The message table, one message per line (indented lines continue it):
/// `NAME: FIELD; FIELD; ...`, each field `NUM JSON TYPE` where
/// - `JSON` is the JSON name, suffixed `?` when the Go field is `omitempty`; `-` means the
///   struct is embedded with `json:",inline"`;
/// - `TYPE` is `s` string, `b` bool, `i` int32, `l` int64, `y` `[]byte`, a special
///   (`Time`, `MicroTime`, `Quantity`, `IntOrString`, `FieldsV1`) or a message name, prefixed
///   `*` for a Go pointer, `[` for a slice and `{` for `map[string]T` (`{[s` is a map of
///   `ExtraValue` string lists).
///
/// Extracted from kubectl 1.32: field numbers from its embedded `generated.proto`
/// descriptors, JSON names, `omitempty` and pointer/slice/map shapes from its Go type data.
pub const MESSAGES: &str = "\
meta.Condition: 1 type s; 2 status s; 3 observedGeneration? l; 4 lastTransitionTime Time;
    5 reason s; 6 message s
meta.DeleteOptions: 1 gracePeriodSeconds? *l; 2 preconditions? *meta.Preconditions;
    3 orphanDependents? *b; 4 propagationPolicy? *s; 5 dryRun? [s;
    6 ignoreStoreReadErrorWithClusterBreakingPotential? *b
meta.FieldSelectorRequirement: 1 key s; 2 operator s; 3 values? [s
meta.LabelSelector: 1 matchLabels? {s; 2 matchExpressions? [meta.LabelSelectorRequirement
meta.LabelSelectorRequirement: 1 key s; 2 operator s; 3 values? [s
meta.ManagedFieldsEntry: 1 manager? s; 2 operation? s; 3 apiVersion? s; 4 time? *Time;
    6 fieldsType? s; 7 fieldsV1? *FieldsV1; 8 subresource? s
meta.ObjectMeta: 1 name? s; 2 generateName? s; 3 namespace? s; 4 selfLink? s; 5 uid? s;
    6 resourceVersion? s; 7 generation? l; 8 creationTimestamp? Time; 9 deletionTimestamp? *Time;
    10 deletionGracePeriodSeconds? *l; 11 labels? {s; 12 annotations? {s;
    13 ownerReferences? [meta.OwnerReference; 14 finalizers? [s;
    17 managedFields? [meta.ManagedFieldsEntry
meta.OwnerReference: 5 apiVersion s; 1 kind s; 3 name s; 4 uid s; 6 controller? *b;
    7 blockOwnerDeletion? *b
meta.Preconditions: 1 uid? *s; 2 resourceVersion? *s
core.AWSElasticBlockStoreVolumeSource: 1 volumeID s; 2 fsType? s; 3 partition? i; 4 readOnly? b
core.Affinity: 1 nodeAffinity? *core.NodeAffinity; 2 podAffinity? *core.PodAffinity;
    3 podAntiAffinity? *core.PodAntiAffinity
core.AppArmorProfile: 1 type s; 2 localhostProfile? *s
core.AzureDiskVolumeSource: 1 diskName s; 2 diskURI s; 3 cachingMode? *s; 4 fsType? *s;
    5 readOnly? *b; 6 kind? *s
core.AzureFileVolumeSource: 1 secretName s; 2 shareName s; 3 readOnly? b
core.Binding: 1 metadata? meta.ObjectMeta; 2 target core.ObjectReference
core.CSIVolumeSource: 1 driver s; 2 readOnly? *b; 3 fsType? *s; 4 volumeAttributes? {s;
    5 nodePublishSecretRef? *core.LocalObjectReference
core.Capabilities: 1 add? [s; 2 drop? [s
core.CephFSVolumeSource: 1 monitors [s; 2 path? s; 3 user? s; 4 secretFile? s;
    5 secretRef? *core.LocalObjectReference; 6 readOnly? b
core.CinderVolumeSource: 1 volumeID s; 2 fsType? s; 3 readOnly? b;
    4 secretRef? *core.LocalObjectReference
core.ClientIPConfig: 1 timeoutSeconds? *i
core.ClusterTrustBundleProjection: 1 name? *s; 2 signerName? *s;
    3 labelSelector? *meta.LabelSelector; 5 optional? *b; 4 path s
core.ConfigMap: 1 metadata? meta.ObjectMeta; 4 immutable? *b; 2 data? {s; 3 binaryData? {y
core.ConfigMapEnvSource: 1 - core.LocalObjectReference; 2 optional? *b
core.ConfigMapKeySelector: 1 - core.LocalObjectReference; 2 key s; 3 optional? *b
core.ConfigMapProjection: 1 - core.LocalObjectReference; 2 items? [core.KeyToPath; 4 optional? *b
core.ConfigMapVolumeSource: 1 - core.LocalObjectReference; 2 items? [core.KeyToPath;
    3 defaultMode? *i; 4 optional? *b
core.Container: 1 name s; 2 image? s; 3 command? [s; 4 args? [s; 5 workingDir? s;
    6 ports? [core.ContainerPort; 19 envFrom? [core.EnvFromSource; 7 env? [core.EnvVar;
    8 resources? core.ResourceRequirements; 23 resizePolicy? [core.ContainerResizePolicy;
    24 restartPolicy? *s; 9 volumeMounts? [core.VolumeMount; 21 volumeDevices? [core.VolumeDevice;
    10 livenessProbe? *core.Probe; 11 readinessProbe? *core.Probe; 22 startupProbe? *core.Probe;
    12 lifecycle? *core.Lifecycle; 13 terminationMessagePath? s; 20 terminationMessagePolicy? s;
    14 imagePullPolicy? s; 15 securityContext? *core.SecurityContext; 16 stdin? b; 17 stdinOnce? b;
    18 tty? b
core.ContainerPort: 1 name? s; 2 hostPort? i; 3 containerPort i; 4 protocol? s; 5 hostIP? s
core.ContainerResizePolicy: 1 resourceName s; 2 restartPolicy s
core.ContainerState: 1 waiting? *core.ContainerStateWaiting;
    2 running? *core.ContainerStateRunning; 3 terminated? *core.ContainerStateTerminated
core.ContainerStateRunning: 1 startedAt? Time
core.ContainerStateTerminated: 1 exitCode i; 2 signal? i; 3 reason? s; 4 message? s;
    5 startedAt? Time; 6 finishedAt? Time; 7 containerID? s
core.ContainerStateWaiting: 1 reason? s; 2 message? s
core.ContainerStatus: 1 name s; 2 state? core.ContainerState; 3 lastState? core.ContainerState;
    4 ready b; 5 restartCount i; 6 image s; 7 imageID s; 8 containerID? s; 9 started? *b;
    10 allocatedResources? {Quantity; 11 resources? *core.ResourceRequirements;
    12 volumeMounts? [core.VolumeMountStatus; 13 user? *core.ContainerUser;
    14 allocatedResourcesStatus? [core.ResourceStatus
core.ContainerUser: 1 linux? *core.LinuxContainerUser
core.DownwardAPIProjection: 1 items? [core.DownwardAPIVolumeFile
core.DownwardAPIVolumeFile: 1 path s; 2 fieldRef? *core.ObjectFieldSelector;
    3 resourceFieldRef? *core.ResourceFieldSelector; 4 mode? *i
core.DownwardAPIVolumeSource: 1 items? [core.DownwardAPIVolumeFile; 2 defaultMode? *i
core.EmptyDirVolumeSource: 1 medium? s; 2 sizeLimit? *Quantity
core.EndpointAddress: 1 ip s; 3 hostname? s; 4 nodeName? *s; 2 targetRef? *core.ObjectReference
core.EndpointPort: 1 name? s; 2 port i; 3 protocol? s; 4 appProtocol? *s
core.EndpointSubset: 1 addresses? [core.EndpointAddress;
    2 notReadyAddresses? [core.EndpointAddress; 3 ports? [core.EndpointPort
core.Endpoints: 1 metadata? meta.ObjectMeta; 2 subsets? [core.EndpointSubset
core.EnvFromSource: 1 prefix? s; 2 configMapRef? *core.ConfigMapEnvSource;
    3 secretRef? *core.SecretEnvSource
core.EnvVar: 1 name s; 2 value? s; 3 valueFrom? *core.EnvVarSource
core.EnvVarSource: 1 fieldRef? *core.ObjectFieldSelector;
    2 resourceFieldRef? *core.ResourceFieldSelector; 3 configMapKeyRef? *core.ConfigMapKeySelector;
    4 secretKeyRef? *core.SecretKeySelector
core.EphemeralContainer: 1 - core.EphemeralContainerCommon; 2 targetContainerName? s
core.EphemeralContainerCommon: 1 name s; 2 image? s; 3 command? [s; 4 args? [s; 5 workingDir? s;
    6 ports? [core.ContainerPort; 19 envFrom? [core.EnvFromSource; 7 env? [core.EnvVar;
    8 resources? core.ResourceRequirements; 23 resizePolicy? [core.ContainerResizePolicy;
    24 restartPolicy? *s; 9 volumeMounts? [core.VolumeMount; 21 volumeDevices? [core.VolumeDevice;
    10 livenessProbe? *core.Probe; 11 readinessProbe? *core.Probe; 22 startupProbe? *core.Probe;
    12 lifecycle? *core.Lifecycle; 13 terminationMessagePath? s; 20 terminationMessagePolicy? s;
    14 imagePullPolicy? s; 15 securityContext? *core.SecurityContext; 16 stdin? b; 17 stdinOnce? b;
    18 tty? b
core.EphemeralVolumeSource: 1 volumeClaimTemplate? *core.PersistentVolumeClaimTemplate
core.ExecAction: 1 command? [s
core.FCVolumeSource: 1 targetWWNs? [s; 2 lun? *i; 3 fsType? s; 4 readOnly? b; 5 wwids? [s
core.FlexVolumeSource: 1 driver s; 2 fsType? s; 3 secretRef? *core.LocalObjectReference;
    4 readOnly? b; 5 options? {s
core.FlockerVolumeSource: 1 datasetName? s; 2 datasetUUID? s
core.GCEPersistentDiskVolumeSource: 1 pdName s; 2 fsType? s; 3 partition? i; 4 readOnly? b
core.GRPCAction: 1 port i; 2 service *s
core.GitRepoVolumeSource: 1 repository s; 2 revision? s; 3 directory? s
core.GlusterfsVolumeSource: 1 endpoints s; 2 path s; 3 readOnly? b
core.HTTPGetAction: 1 path? s; 2 port IntOrString; 3 host? s; 4 scheme? s;
    5 httpHeaders? [core.HTTPHeader
core.HTTPHeader: 1 name s; 2 value s
core.HostAlias: 1 ip s; 2 hostnames? [s
core.HostIP: 1 ip s
core.HostPathVolumeSource: 1 path s; 2 type? *s
core.ISCSIVolumeSource: 1 targetPortal s; 2 iqn s; 3 lun i; 4 iscsiInterface? s; 5 fsType? s;
    6 readOnly? b; 7 portals? [s; 8 chapAuthDiscovery? b; 11 chapAuthSession? b;
    10 secretRef? *core.LocalObjectReference; 12 initiatorName? *s
core.ImageVolumeSource: 1 reference? s; 2 pullPolicy? s
core.KeyToPath: 1 key s; 2 path s; 3 mode? *i
core.Lifecycle: 1 postStart? *core.LifecycleHandler; 2 preStop? *core.LifecycleHandler
core.LifecycleHandler: 1 exec? *core.ExecAction; 2 httpGet? *core.HTTPGetAction;
    3 tcpSocket? *core.TCPSocketAction; 4 sleep? *core.SleepAction
core.LimitRange: 1 metadata? meta.ObjectMeta; 2 spec? core.LimitRangeSpec
core.LimitRangeItem: 1 type s; 2 max? {Quantity; 3 min? {Quantity; 4 default? {Quantity;
    5 defaultRequest? {Quantity; 6 maxLimitRequestRatio? {Quantity
core.LimitRangeSpec: 1 limits [core.LimitRangeItem
core.LinuxContainerUser: 1 uid l; 2 gid l; 3 supplementalGroups? [l
core.LoadBalancerIngress: 1 ip? s; 2 hostname? s; 3 ipMode? *s; 4 ports? [core.PortStatus
core.LoadBalancerStatus: 1 ingress? [core.LoadBalancerIngress
core.LocalObjectReference: 1 name? s
core.ModifyVolumeStatus: 1 targetVolumeAttributesClassName? s; 2 status s
core.NFSVolumeSource: 1 server s; 2 path s; 3 readOnly? b
core.Namespace: 1 metadata? meta.ObjectMeta; 2 spec? core.NamespaceSpec;
    3 status? core.NamespaceStatus
core.NamespaceCondition: 1 type s; 2 status s; 4 lastTransitionTime? Time; 5 reason? s;
    6 message? s
core.NamespaceSpec: 1 finalizers? [s
core.NamespaceStatus: 1 phase? s; 2 conditions? [core.NamespaceCondition
core.NodeAffinity: 1 requiredDuringSchedulingIgnoredDuringExecution? *core.NodeSelector;
    2 preferredDuringSchedulingIgnoredDuringExecution? [core.PreferredSchedulingTerm
core.NodeSelector: 1 nodeSelectorTerms [core.NodeSelectorTerm
core.NodeSelectorRequirement: 1 key s; 2 operator s; 3 values? [s
core.NodeSelectorTerm: 1 matchExpressions? [core.NodeSelectorRequirement;
    2 matchFields? [core.NodeSelectorRequirement
core.ObjectFieldSelector: 1 apiVersion? s; 2 fieldPath s
core.ObjectReference: 1 kind? s; 2 namespace? s; 3 name? s; 4 uid? s; 5 apiVersion? s;
    6 resourceVersion? s; 7 fieldPath? s
core.PersistentVolumeClaim: 1 metadata? meta.ObjectMeta; 2 spec? core.PersistentVolumeClaimSpec;
    3 status? core.PersistentVolumeClaimStatus
core.PersistentVolumeClaimCondition: 1 type s; 2 status s; 3 lastProbeTime? Time;
    4 lastTransitionTime? Time; 5 reason? s; 6 message? s
core.PersistentVolumeClaimSpec: 1 accessModes? [s; 4 selector? *meta.LabelSelector;
    2 resources? core.VolumeResourceRequirements; 3 volumeName? s; 5 storageClassName? *s;
    6 volumeMode? *s; 7 dataSource? *core.TypedLocalObjectReference;
    8 dataSourceRef? *core.TypedObjectReference; 9 volumeAttributesClassName? *s
core.PersistentVolumeClaimStatus: 1 phase? s; 2 accessModes? [s; 3 capacity? {Quantity;
    4 conditions? [core.PersistentVolumeClaimCondition; 5 allocatedResources? {Quantity;
    7 allocatedResourceStatuses? {s; 8 currentVolumeAttributesClassName? *s;
    9 modifyVolumeStatus? *core.ModifyVolumeStatus
core.PersistentVolumeClaimTemplate: 1 metadata? meta.ObjectMeta;
    2 spec core.PersistentVolumeClaimSpec
core.PersistentVolumeClaimVolumeSource: 1 claimName s; 2 readOnly? b
core.PhotonPersistentDiskVolumeSource: 1 pdID s; 2 fsType? s
core.Pod: 1 metadata? meta.ObjectMeta; 2 spec? core.PodSpec; 3 status? core.PodStatus
core.PodAffinity: 1 requiredDuringSchedulingIgnoredDuringExecution? [core.PodAffinityTerm;
    2 preferredDuringSchedulingIgnoredDuringExecution? [core.WeightedPodAffinityTerm
core.PodAffinityTerm: 1 labelSelector? *meta.LabelSelector; 2 namespaces? [s; 3 topologyKey s;
    4 namespaceSelector? *meta.LabelSelector; 5 matchLabelKeys? [s; 6 mismatchLabelKeys? [s
core.PodAntiAffinity: 1 requiredDuringSchedulingIgnoredDuringExecution? [core.PodAffinityTerm;
    2 preferredDuringSchedulingIgnoredDuringExecution? [core.WeightedPodAffinityTerm
core.PodCondition: 1 type s; 2 status s; 3 lastProbeTime? Time; 4 lastTransitionTime? Time;
    5 reason? s; 6 message? s
core.PodDNSConfig: 1 nameservers? [s; 2 searches? [s; 3 options? [core.PodDNSConfigOption
core.PodDNSConfigOption: 1 name? s; 2 value? *s
core.PodIP: 1 ip s
core.PodOS: 1 name s
core.PodReadinessGate: 1 conditionType s
core.PodResourceClaim: 1 name s; 3 resourceClaimName? *s; 4 resourceClaimTemplateName? *s
core.PodResourceClaimStatus: 1 name s; 2 resourceClaimName? *s
core.PodSchedulingGate: 1 name s
core.PodSecurityContext: 1 seLinuxOptions? *core.SELinuxOptions;
    8 windowsOptions? *core.WindowsSecurityContextOptions; 2 runAsUser? *l; 6 runAsGroup? *l;
    3 runAsNonRoot? *b; 4 supplementalGroups? [l; 12 supplementalGroupsPolicy? *s; 5 fsGroup? *l;
    7 sysctls? [core.Sysctl; 9 fsGroupChangePolicy? *s; 10 seccompProfile? *core.SeccompProfile;
    11 appArmorProfile? *core.AppArmorProfile; 13 seLinuxChangePolicy? *s
core.PodSpec: 1 volumes? [core.Volume; 20 initContainers? [core.Container;
    2 containers [core.Container; 34 ephemeralContainers? [core.EphemeralContainer;
    3 restartPolicy? s; 4 terminationGracePeriodSeconds? *l; 5 activeDeadlineSeconds? *l;
    6 dnsPolicy? s; 7 nodeSelector? {s; 8 serviceAccountName? s; 9 serviceAccount? s;
    21 automountServiceAccountToken? *b; 10 nodeName? s; 11 hostNetwork? b; 12 hostPID? b;
    13 hostIPC? b; 27 shareProcessNamespace? *b; 14 securityContext? *core.PodSecurityContext;
    15 imagePullSecrets? [core.LocalObjectReference; 16 hostname? s; 17 subdomain? s;
    18 affinity? *core.Affinity; 19 schedulerName? s; 22 tolerations? [core.Toleration;
    23 hostAliases? [core.HostAlias; 24 priorityClassName? s; 25 priority? *i;
    26 dnsConfig? *core.PodDNSConfig; 28 readinessGates? [core.PodReadinessGate;
    29 runtimeClassName? *s; 30 enableServiceLinks? *b; 31 preemptionPolicy? *s;
    32 overhead? {Quantity; 33 topologySpreadConstraints? [core.TopologySpreadConstraint;
    35 setHostnameAsFQDN? *b; 36 os? *core.PodOS; 37 hostUsers? *b;
    38 schedulingGates? [core.PodSchedulingGate; 39 resourceClaims? [core.PodResourceClaim;
    40 resources? *core.ResourceRequirements
core.PodStatus: 1 phase? s; 2 conditions? [core.PodCondition; 3 message? s; 4 reason? s;
    11 nominatedNodeName? s; 5 hostIP? s; 16 hostIPs? [core.HostIP; 6 podIP? s;
    12 podIPs? [core.PodIP; 7 startTime? *Time; 10 initContainerStatuses? [core.ContainerStatus;
    8 containerStatuses? [core.ContainerStatus; 9 qosClass? s;
    13 ephemeralContainerStatuses? [core.ContainerStatus; 14 resize? s;
    15 resourceClaimStatuses? [core.PodResourceClaimStatus
core.PodTemplate: 1 metadata? meta.ObjectMeta; 2 template? core.PodTemplateSpec
core.PodTemplateSpec: 1 metadata? meta.ObjectMeta; 2 spec? core.PodSpec
core.PortStatus: 1 port i; 2 protocol s; 3 error? *s
core.PortworxVolumeSource: 1 volumeID s; 2 fsType? s; 3 readOnly? b
core.PreferredSchedulingTerm: 1 weight i; 2 preference core.NodeSelectorTerm
core.Probe: 1 - core.ProbeHandler; 2 initialDelaySeconds? i; 3 timeoutSeconds? i;
    4 periodSeconds? i; 5 successThreshold? i; 6 failureThreshold? i;
    7 terminationGracePeriodSeconds? *l
core.ProbeHandler: 1 exec? *core.ExecAction; 2 httpGet? *core.HTTPGetAction;
    3 tcpSocket? *core.TCPSocketAction; 4 grpc? *core.GRPCAction
core.ProjectedVolumeSource: 1 sources [core.VolumeProjection; 2 defaultMode? *i
core.QuobyteVolumeSource: 1 registry s; 2 volume s; 3 readOnly? b; 4 user? s; 5 group? s;
    6 tenant? s
core.RBDVolumeSource: 1 monitors [s; 2 image s; 3 fsType? s; 4 pool? s; 5 user? s; 6 keyring? s;
    7 secretRef? *core.LocalObjectReference; 8 readOnly? b
core.ReplicationController: 1 metadata? meta.ObjectMeta; 2 spec? core.ReplicationControllerSpec;
    3 status? core.ReplicationControllerStatus
core.ReplicationControllerCondition: 1 type s; 2 status s; 3 lastTransitionTime? Time; 4 reason? s;
    5 message? s
core.ReplicationControllerSpec: 1 replicas? *i; 4 minReadySeconds? i; 2 selector? {s;
    3 template? *core.PodTemplateSpec
core.ReplicationControllerStatus: 1 replicas i; 2 fullyLabeledReplicas? i; 4 readyReplicas? i;
    5 availableReplicas? i; 3 observedGeneration? l;
    6 conditions? [core.ReplicationControllerCondition
core.ResourceClaim: 1 name s; 2 request? s
core.ResourceFieldSelector: 1 containerName? s; 2 resource s; 3 divisor? Quantity
core.ResourceHealth: 1 resourceID s; 2 health? s
core.ResourceQuota: 1 metadata? meta.ObjectMeta; 2 spec? core.ResourceQuotaSpec;
    3 status? core.ResourceQuotaStatus
core.ResourceQuotaSpec: 1 hard? {Quantity; 2 scopes? [s; 3 scopeSelector? *core.ScopeSelector
core.ResourceQuotaStatus: 1 hard? {Quantity; 2 used? {Quantity
core.ResourceRequirements: 1 limits? {Quantity; 2 requests? {Quantity;
    3 claims? [core.ResourceClaim
core.ResourceStatus: 1 name s; 2 resources? [core.ResourceHealth
core.SELinuxOptions: 1 user? s; 2 role? s; 3 type? s; 4 level? s
core.ScaleIOVolumeSource: 1 gateway s; 2 system s; 3 secretRef *core.LocalObjectReference;
    4 sslEnabled? b; 5 protectionDomain? s; 6 storagePool? s; 7 storageMode? s; 8 volumeName? s;
    9 fsType? s; 10 readOnly? b
core.ScopeSelector: 1 matchExpressions? [core.ScopedResourceSelectorRequirement
core.ScopedResourceSelectorRequirement: 1 scopeName s; 2 operator s; 3 values? [s
core.SeccompProfile: 1 type s; 2 localhostProfile? *s
core.Secret: 1 metadata? meta.ObjectMeta; 5 immutable? *b; 2 data? {y; 4 stringData? {s; 3 type? s
core.SecretEnvSource: 1 - core.LocalObjectReference; 2 optional? *b
core.SecretKeySelector: 1 - core.LocalObjectReference; 2 key s; 3 optional? *b
core.SecretProjection: 1 - core.LocalObjectReference; 2 items? [core.KeyToPath; 4 optional? *b
core.SecretVolumeSource: 1 secretName? s; 2 items? [core.KeyToPath; 3 defaultMode? *i;
    4 optional? *b
core.SecurityContext: 1 capabilities? *core.Capabilities; 2 privileged? *b;
    3 seLinuxOptions? *core.SELinuxOptions; 10 windowsOptions? *core.WindowsSecurityContextOptions;
    4 runAsUser? *l; 8 runAsGroup? *l; 5 runAsNonRoot? *b; 6 readOnlyRootFilesystem? *b;
    7 allowPrivilegeEscalation? *b; 9 procMount? *s; 11 seccompProfile? *core.SeccompProfile;
    12 appArmorProfile? *core.AppArmorProfile
core.Service: 1 metadata? meta.ObjectMeta; 2 spec? core.ServiceSpec; 3 status? core.ServiceStatus
core.ServiceAccount: 1 metadata? meta.ObjectMeta; 2 secrets? [core.ObjectReference;
    3 imagePullSecrets? [core.LocalObjectReference; 4 automountServiceAccountToken? *b
core.ServiceAccountTokenProjection: 1 audience? s; 2 expirationSeconds? *l; 3 path s
core.ServicePort: 1 name? s; 2 protocol? s; 6 appProtocol? *s; 3 port i; 4 targetPort? IntOrString;
    5 nodePort? i
core.ServiceSpec: 1 ports? [core.ServicePort; 2 selector? {s; 3 clusterIP? s; 18 clusterIPs? [s;
    4 type? s; 5 externalIPs? [s; 7 sessionAffinity? s; 8 loadBalancerIP? s;
    9 loadBalancerSourceRanges? [s; 10 externalName? s; 11 externalTrafficPolicy? s;
    12 healthCheckNodePort? i; 13 publishNotReadyAddresses? b;
    14 sessionAffinityConfig? *core.SessionAffinityConfig; 19 ipFamilies? [s;
    17 ipFamilyPolicy? *s; 20 allocateLoadBalancerNodePorts? *b; 21 loadBalancerClass? *s;
    22 internalTrafficPolicy? *s; 23 trafficDistribution? *s
core.ServiceStatus: 1 loadBalancer? core.LoadBalancerStatus; 2 conditions? [meta.Condition
core.SessionAffinityConfig: 1 clientIP? *core.ClientIPConfig
core.SleepAction: 1 seconds l
core.StorageOSVolumeSource: 1 volumeName? s; 2 volumeNamespace? s; 3 fsType? s; 4 readOnly? b;
    5 secretRef? *core.LocalObjectReference
core.Sysctl: 1 name s; 2 value s
core.TCPSocketAction: 1 port IntOrString; 2 host? s
core.Toleration: 1 key? s; 2 operator? s; 3 value? s; 4 effect? s; 5 tolerationSeconds? *l
core.TopologySpreadConstraint: 1 maxSkew i; 2 topologyKey s; 3 whenUnsatisfiable s;
    4 labelSelector? *meta.LabelSelector; 5 minDomains? *i; 6 nodeAffinityPolicy? *s;
    7 nodeTaintsPolicy? *s; 8 matchLabelKeys? [s
core.TypedLocalObjectReference: 1 apiGroup *s; 2 kind s; 3 name s
core.TypedObjectReference: 1 apiGroup *s; 2 kind s; 3 name s; 4 namespace? *s
core.Volume: 1 name s; 2 - core.VolumeSource
core.VolumeDevice: 1 name s; 2 devicePath s
core.VolumeMount: 1 name s; 2 readOnly? b; 7 recursiveReadOnly? *s; 3 mountPath s; 4 subPath? s;
    5 mountPropagation? *s; 6 subPathExpr? s
core.VolumeMountStatus: 1 name s; 2 mountPath s; 3 readOnly? b; 4 recursiveReadOnly? *s
core.VolumeProjection: 1 secret? *core.SecretProjection;
    2 downwardAPI? *core.DownwardAPIProjection; 3 configMap? *core.ConfigMapProjection;
    4 serviceAccountToken? *core.ServiceAccountTokenProjection;
    5 clusterTrustBundle? *core.ClusterTrustBundleProjection
core.VolumeResourceRequirements: 1 limits? {Quantity; 2 requests? {Quantity
core.VolumeSource: 1 hostPath? *core.HostPathVolumeSource; 2 emptyDir? *core.EmptyDirVolumeSource;
    3 gcePersistentDisk? *core.GCEPersistentDiskVolumeSource;
    4 awsElasticBlockStore? *core.AWSElasticBlockStoreVolumeSource;
    5 gitRepo? *core.GitRepoVolumeSource; 6 secret? *core.SecretVolumeSource;
    7 nfs? *core.NFSVolumeSource; 8 iscsi? *core.ISCSIVolumeSource;
    9 glusterfs? *core.GlusterfsVolumeSource;
    10 persistentVolumeClaim? *core.PersistentVolumeClaimVolumeSource;
    11 rbd? *core.RBDVolumeSource; 12 flexVolume? *core.FlexVolumeSource;
    13 cinder? *core.CinderVolumeSource; 14 cephfs? *core.CephFSVolumeSource;
    15 flocker? *core.FlockerVolumeSource; 16 downwardAPI? *core.DownwardAPIVolumeSource;
    17 fc? *core.FCVolumeSource; 18 azureFile? *core.AzureFileVolumeSource;
    19 configMap? *core.ConfigMapVolumeSource;
    20 vsphereVolume? *core.VsphereVirtualDiskVolumeSource; 21 quobyte? *core.QuobyteVolumeSource;
    22 azureDisk? *core.AzureDiskVolumeSource;
    23 photonPersistentDisk? *core.PhotonPersistentDiskVolumeSource;
    26 projected? *core.ProjectedVolumeSource; 24 portworxVolume? *core.PortworxVolumeSource;
    25 scaleIO? *core.ScaleIOVolumeSource; 27 storageos? *core.StorageOSVolumeSource;
    28 csi? *core.CSIVolumeSource; 29 ephemeral? *core.EphemeralVolumeSource;
    30 image? *core.ImageVolumeSource
core.VsphereVirtualDiskVolumeSource: 1 volumePath s; 2 fsType? s; 3 storagePolicyName? s;
    4 storagePolicyID? s
core.WeightedPodAffinityTerm: 1 weight i; 2 podAffinityTerm core.PodAffinityTerm
core.WindowsSecurityContextOptions: 1 gmsaCredentialSpecName? *s; 2 gmsaCredentialSpec? *s;
    3 runAsUserName? *s; 4 hostProcess? *b
apps.DaemonSet: 1 metadata? meta.ObjectMeta; 2 spec? apps.DaemonSetSpec;
    3 status? apps.DaemonSetStatus
apps.DaemonSetCondition: 1 type s; 2 status s; 3 lastTransitionTime? Time; 4 reason? s;
    5 message? s
apps.DaemonSetSpec: 1 selector *meta.LabelSelector; 2 template core.PodTemplateSpec;
    3 updateStrategy? apps.DaemonSetUpdateStrategy; 4 minReadySeconds? i;
    6 revisionHistoryLimit? *i
apps.DaemonSetStatus: 1 currentNumberScheduled i; 2 numberMisscheduled i;
    3 desiredNumberScheduled i; 4 numberReady i; 5 observedGeneration? l;
    6 updatedNumberScheduled? i; 7 numberAvailable? i; 8 numberUnavailable? i;
    9 collisionCount? *i; 10 conditions? [apps.DaemonSetCondition
apps.DaemonSetUpdateStrategy: 1 type? s; 2 rollingUpdate? *apps.RollingUpdateDaemonSet
apps.Deployment: 1 metadata? meta.ObjectMeta; 2 spec? apps.DeploymentSpec;
    3 status? apps.DeploymentStatus
apps.DeploymentCondition: 1 type s; 2 status s; 6 lastUpdateTime? Time; 7 lastTransitionTime? Time;
    4 reason? s; 5 message? s
apps.DeploymentSpec: 1 replicas? *i; 2 selector *meta.LabelSelector;
    3 template core.PodTemplateSpec; 4 strategy? apps.DeploymentStrategy; 5 minReadySeconds? i;
    6 revisionHistoryLimit? *i; 7 paused? b; 9 progressDeadlineSeconds? *i
apps.DeploymentStatus: 1 observedGeneration? l; 2 replicas? i; 3 updatedReplicas? i;
    7 readyReplicas? i; 4 availableReplicas? i; 5 unavailableReplicas? i;
    6 conditions? [apps.DeploymentCondition; 8 collisionCount? *i
apps.DeploymentStrategy: 1 type? s; 2 rollingUpdate? *apps.RollingUpdateDeployment
apps.ReplicaSet: 1 metadata? meta.ObjectMeta; 2 spec? apps.ReplicaSetSpec;
    3 status? apps.ReplicaSetStatus
apps.ReplicaSetCondition: 1 type s; 2 status s; 3 lastTransitionTime? Time; 4 reason? s;
    5 message? s
apps.ReplicaSetSpec: 1 replicas? *i; 4 minReadySeconds? i; 2 selector *meta.LabelSelector;
    3 template? core.PodTemplateSpec
apps.ReplicaSetStatus: 1 replicas i; 2 fullyLabeledReplicas? i; 4 readyReplicas? i;
    5 availableReplicas? i; 3 observedGeneration? l; 6 conditions? [apps.ReplicaSetCondition
apps.RollingUpdateDaemonSet: 1 maxUnavailable? *IntOrString; 2 maxSurge? *IntOrString
apps.RollingUpdateDeployment: 1 maxUnavailable? *IntOrString; 2 maxSurge? *IntOrString
apps.RollingUpdateStatefulSetStrategy: 1 partition? *i; 2 maxUnavailable? *IntOrString
apps.StatefulSet: 1 metadata? meta.ObjectMeta; 2 spec? apps.StatefulSetSpec;
    3 status? apps.StatefulSetStatus
apps.StatefulSetCondition: 1 type s; 2 status s; 3 lastTransitionTime? Time; 4 reason? s;
    5 message? s
apps.StatefulSetOrdinals: 1 start i
apps.StatefulSetPersistentVolumeClaimRetentionPolicy: 1 whenDeleted? s; 2 whenScaled? s
apps.StatefulSetSpec: 1 replicas? *i; 2 selector *meta.LabelSelector;
    3 template core.PodTemplateSpec; 4 volumeClaimTemplates? [core.PersistentVolumeClaim;
    5 serviceName s; 6 podManagementPolicy? s; 7 updateStrategy? apps.StatefulSetUpdateStrategy;
    8 revisionHistoryLimit? *i; 9 minReadySeconds? i;
    10 persistentVolumeClaimRetentionPolicy? *apps.StatefulSetPersistentVolumeClaimRetentionPolicy;
    11 ordinals? *apps.StatefulSetOrdinals
apps.StatefulSetStatus: 1 observedGeneration? l; 2 replicas i; 3 readyReplicas? i;
    4 currentReplicas? i; 5 updatedReplicas? i; 6 currentRevision? s; 7 updateRevision? s;
    9 collisionCount? *i; 10 conditions? [apps.StatefulSetCondition; 11 availableReplicas i
apps.StatefulSetUpdateStrategy: 1 type? s; 2 rollingUpdate? *apps.RollingUpdateStatefulSetStrategy
batch.CronJob: 1 metadata? meta.ObjectMeta; 2 spec? batch.CronJobSpec;
    3 status? batch.CronJobStatus
batch.CronJobSpec: 1 schedule s; 8 timeZone? *s; 2 startingDeadlineSeconds? *l;
    3 concurrencyPolicy? s; 4 suspend? *b; 5 jobTemplate batch.JobTemplateSpec;
    6 successfulJobsHistoryLimit? *i; 7 failedJobsHistoryLimit? *i
batch.CronJobStatus: 1 active? [core.ObjectReference; 4 lastScheduleTime? *Time;
    5 lastSuccessfulTime? *Time
batch.Job: 1 metadata? meta.ObjectMeta; 2 spec? batch.JobSpec; 3 status? batch.JobStatus
batch.JobCondition: 1 type s; 2 status s; 3 lastProbeTime? Time; 4 lastTransitionTime? Time;
    5 reason? s; 6 message? s
batch.JobSpec: 1 parallelism? *i; 2 completions? *i; 3 activeDeadlineSeconds? *l;
    11 podFailurePolicy? *batch.PodFailurePolicy; 16 successPolicy? *batch.SuccessPolicy;
    7 backoffLimit? *i; 12 backoffLimitPerIndex? *i; 13 maxFailedIndexes? *i;
    4 selector? *meta.LabelSelector; 5 manualSelector? *b; 6 template core.PodTemplateSpec;
    8 ttlSecondsAfterFinished? *i; 9 completionMode? *s; 10 suspend? *b;
    14 podReplacementPolicy? *s; 15 managedBy? *s
batch.JobStatus: 1 conditions? [batch.JobCondition; 2 startTime? *Time; 3 completionTime? *Time;
    4 active? i; 5 succeeded? i; 6 failed? i; 11 terminating? *i; 7 completedIndexes? s;
    10 failedIndexes? *s; 8 uncountedTerminatedPods? *batch.UncountedTerminatedPods; 9 ready? *i
batch.JobTemplateSpec: 1 metadata? meta.ObjectMeta; 2 spec? batch.JobSpec
batch.PodFailurePolicy: 1 rules [batch.PodFailurePolicyRule
batch.PodFailurePolicyOnExitCodesRequirement: 1 containerName? *s; 2 operator s; 3 values [i
batch.PodFailurePolicyOnPodConditionsPattern: 1 type s; 2 status s
batch.PodFailurePolicyRule: 1 action s;
    2 onExitCodes? *batch.PodFailurePolicyOnExitCodesRequirement;
    3 onPodConditions? [batch.PodFailurePolicyOnPodConditionsPattern
batch.SuccessPolicy: 1 rules [batch.SuccessPolicyRule
batch.SuccessPolicyRule: 1 succeededIndexes? *s; 2 succeededCount? *i
batch.UncountedTerminatedPods: 1 succeeded? [s; 2 failed? [s
rbac.AggregationRule: 1 clusterRoleSelectors? [meta.LabelSelector
rbac.ClusterRole: 1 metadata? meta.ObjectMeta; 2 rules [rbac.PolicyRule;
    3 aggregationRule? *rbac.AggregationRule
rbac.ClusterRoleBinding: 1 metadata? meta.ObjectMeta; 2 subjects? [rbac.Subject;
    3 roleRef rbac.RoleRef
rbac.PolicyRule: 1 verbs [s; 2 apiGroups? [s; 3 resources? [s; 4 resourceNames? [s;
    5 nonResourceURLs? [s
rbac.Role: 1 metadata? meta.ObjectMeta; 2 rules [rbac.PolicyRule
rbac.RoleBinding: 1 metadata? meta.ObjectMeta; 2 subjects? [rbac.Subject; 3 roleRef rbac.RoleRef
rbac.RoleRef: 1 apiGroup s; 2 kind s; 3 name s
rbac.Subject: 1 kind s; 2 apiGroup? s; 3 name s; 4 namespace? s
net.HTTPIngressPath: 1 path? s; 3 pathType *s; 2 backend net.IngressBackend
net.HTTPIngressRuleValue: 1 paths [net.HTTPIngressPath
net.IPBlock: 1 cidr s; 2 except? [s
net.Ingress: 1 metadata? meta.ObjectMeta; 2 spec? net.IngressSpec; 3 status? net.IngressStatus
net.IngressBackend: 4 service? *net.IngressServiceBackend;
    3 resource? *core.TypedLocalObjectReference
net.IngressClass: 1 metadata? meta.ObjectMeta; 2 spec? net.IngressClassSpec
net.IngressClassParametersReference: 1 apiGroup? *s; 2 kind s; 3 name s; 4 scope *s;
    5 namespace? *s
net.IngressClassSpec: 1 controller? s; 2 parameters? *net.IngressClassParametersReference
net.IngressLoadBalancerIngress: 1 ip? s; 2 hostname? s; 4 ports? [net.IngressPortStatus
net.IngressLoadBalancerStatus: 1 ingress? [net.IngressLoadBalancerIngress
net.IngressPortStatus: 1 port i; 2 protocol s; 3 error? *s
net.IngressRule: 1 host? s; 2 - net.IngressRuleValue
net.IngressRuleValue: 1 http? *net.HTTPIngressRuleValue
net.IngressServiceBackend: 1 name s; 2 port? net.ServiceBackendPort
net.IngressSpec: 4 ingressClassName? *s; 1 defaultBackend? *net.IngressBackend;
    2 tls? [net.IngressTLS; 3 rules? [net.IngressRule
net.IngressStatus: 1 loadBalancer? net.IngressLoadBalancerStatus
net.IngressTLS: 1 hosts? [s; 2 secretName? s
net.NetworkPolicy: 1 metadata? meta.ObjectMeta; 2 spec? net.NetworkPolicySpec
net.NetworkPolicyEgressRule: 1 ports? [net.NetworkPolicyPort; 2 to? [net.NetworkPolicyPeer
net.NetworkPolicyIngressRule: 1 ports? [net.NetworkPolicyPort; 2 from? [net.NetworkPolicyPeer
net.NetworkPolicyPeer: 1 podSelector? *meta.LabelSelector;
    2 namespaceSelector? *meta.LabelSelector; 3 ipBlock? *net.IPBlock
net.NetworkPolicyPort: 1 protocol? *s; 2 port? *IntOrString; 3 endPort? *i
net.NetworkPolicySpec: 1 podSelector meta.LabelSelector; 2 ingress? [net.NetworkPolicyIngressRule;
    3 egress? [net.NetworkPolicyEgressRule; 4 policyTypes? [s
net.ServiceBackendPort: 1 name? s; 2 number? i
policy.Eviction: 1 metadata? meta.ObjectMeta; 2 deleteOptions? *meta.DeleteOptions
policy.PodDisruptionBudget: 1 metadata? meta.ObjectMeta; 2 spec? policy.PodDisruptionBudgetSpec;
    3 status? policy.PodDisruptionBudgetStatus
policy.PodDisruptionBudgetSpec: 1 minAvailable? *IntOrString; 2 selector? *meta.LabelSelector;
    3 maxUnavailable? *IntOrString; 4 unhealthyPodEvictionPolicy? *s
policy.PodDisruptionBudgetStatus: 1 observedGeneration? l; 2 disruptedPods? {Time;
    3 disruptionsAllowed i; 4 currentHealthy i; 5 desiredHealthy i; 6 expectedPods i;
    7 conditions? [meta.Condition
sched.PriorityClass: 1 metadata? meta.ObjectMeta; 2 value i; 3 globalDefault? b; 4 description? s;
    5 preemptionPolicy? *s
authn.BoundObjectReference: 1 kind? s; 2 apiVersion? s; 3 name? s; 4 uid? s
authn.SelfSubjectReview: 1 metadata? meta.ObjectMeta; 2 status? authn.SelfSubjectReviewStatus
authn.SelfSubjectReviewStatus: 1 userInfo? authn.UserInfo
authn.TokenRequest: 1 metadata? meta.ObjectMeta; 2 spec authn.TokenRequestSpec;
    3 status? authn.TokenRequestStatus
authn.TokenRequestSpec: 1 audiences [s; 4 expirationSeconds *l;
    3 boundObjectRef *authn.BoundObjectReference
authn.TokenRequestStatus: 1 token s; 2 expirationTimestamp Time
authn.TokenReview: 1 metadata? meta.ObjectMeta; 2 spec authn.TokenReviewSpec;
    3 status? authn.TokenReviewStatus
authn.TokenReviewSpec: 1 token? s; 2 audiences? [s
authn.TokenReviewStatus: 1 authenticated? b; 2 user? authn.UserInfo; 4 audiences? [s; 3 error? s
authn.UserInfo: 1 username? s; 2 uid? s; 3 groups? [s; 4 extra? {[s
authz.FieldSelectorAttributes: 1 rawSelector? s; 2 requirements? [meta.FieldSelectorRequirement
authz.LabelSelectorAttributes: 1 rawSelector? s; 2 requirements? [meta.LabelSelectorRequirement
authz.NonResourceAttributes: 1 path? s; 2 verb? s
authz.NonResourceRule: 1 verbs [s; 2 nonResourceURLs? [s
authz.ResourceAttributes: 1 namespace? s; 2 verb? s; 3 group? s; 4 version? s; 5 resource? s;
    6 subresource? s; 7 name? s; 8 fieldSelector? *authz.FieldSelectorAttributes;
    9 labelSelector? *authz.LabelSelectorAttributes
authz.ResourceRule: 1 verbs [s; 2 apiGroups? [s; 3 resources? [s; 4 resourceNames? [s
authz.SelfSubjectAccessReview: 1 metadata? meta.ObjectMeta;
    2 spec authz.SelfSubjectAccessReviewSpec; 3 status? authz.SubjectAccessReviewStatus
authz.SelfSubjectAccessReviewSpec: 1 resourceAttributes? *authz.ResourceAttributes;
    2 nonResourceAttributes? *authz.NonResourceAttributes
authz.SelfSubjectRulesReview: 1 metadata? meta.ObjectMeta; 2 spec authz.SelfSubjectRulesReviewSpec;
    3 status? authz.SubjectRulesReviewStatus
authz.SelfSubjectRulesReviewSpec: 1 namespace? s
authz.SubjectAccessReview: 1 metadata? meta.ObjectMeta; 2 spec authz.SubjectAccessReviewSpec;
    3 status? authz.SubjectAccessReviewStatus
authz.SubjectAccessReviewSpec: 1 resourceAttributes? *authz.ResourceAttributes;
    2 nonResourceAttributes? *authz.NonResourceAttributes; 3 user? s; 4 groups? [s; 5 extra? {[s;
    6 uid? s
authz.SubjectAccessReviewStatus: 1 allowed b; 4 denied? b; 2 reason? s; 3 evaluationError? s
authz.SubjectRulesReviewStatus: 1 resourceRules [authz.ResourceRule;
    2 nonResourceRules [authz.NonResourceRule; 3 incomplete b; 4 evaluationError? s
autoscaling.CrossVersionObjectReference: 1 kind s; 2 name s; 3 apiVersion? s
autoscaling.HorizontalPodAutoscaler: 1 metadata? meta.ObjectMeta;
    2 spec? autoscaling.HorizontalPodAutoscalerSpec;
    3 status? autoscaling.HorizontalPodAutoscalerStatus
autoscaling.HorizontalPodAutoscalerSpec: 1 scaleTargetRef autoscaling.CrossVersionObjectReference;
    2 minReplicas? *i; 3 maxReplicas i; 4 targetCPUUtilizationPercentage? *i
autoscaling.HorizontalPodAutoscalerStatus: 1 observedGeneration? *l; 2 lastScaleTime? *Time;
    3 currentReplicas i; 4 desiredReplicas i; 5 currentCPUUtilizationPercentage? *i
autoscaling.Scale: 1 metadata? meta.ObjectMeta; 2 spec? autoscaling.ScaleSpec;
    3 status? autoscaling.ScaleStatus
autoscaling.ScaleSpec: 1 replicas? i
autoscaling.ScaleStatus: 1 replicas i; 2 selector? s
certs.CertificateSigningRequest: 1 metadata? meta.ObjectMeta;
    2 spec certs.CertificateSigningRequestSpec; 3 status? certs.CertificateSigningRequestStatus
certs.CertificateSigningRequestCondition: 1 type s; 6 status s; 2 reason? s; 3 message? s;
    4 lastUpdateTime? Time; 5 lastTransitionTime? Time
certs.CertificateSigningRequestSpec: 1 request y; 7 signerName s; 8 expirationSeconds? *i;
    5 usages? [s; 2 username? s; 3 uid? s; 4 groups? [s; 6 extra? {[s
certs.CertificateSigningRequestStatus: 1 conditions? [certs.CertificateSigningRequestCondition;
    2 certificate? y
coord.Lease: 1 metadata? meta.ObjectMeta; 2 spec? coord.LeaseSpec
coord.LeaseSpec: 1 holderIdentity? *s; 2 leaseDurationSeconds? *i; 3 acquireTime? *MicroTime;
    4 renewTime? *MicroTime; 5 leaseTransitions? *i; 6 strategy? *s; 7 preferredHolder? *s
";

/// How a field is held in the Go struct.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Card {
    /// A plain value (always on the wire when it is a scalar or struct).
    Value,
    /// A pointer: on the wire only when set.
    Ptr,
    /// A slice: one wire record per element (scalars may also come packed).
    List,
    /// `map[string]T`: one `{1: key, 2: value}` entry message per element.
    Map,
}

/// The element type of a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ty {
    Str,
    Bool,
    I32,
    I64,
    Bytes,
    Time,
    MicroTime,
    Quantity,
    IntOrString,
    FieldsV1,
    /// `ExtraValue`: a message `{1: repeated string}` that is a `[]string` in Go.
    StrList,
    Msg(&'static str),
}

/// One parsed field of [`MESSAGES`].
#[derive(Debug, Clone, Copy)]
struct Field {
    num: u32,
    json: &'static str,
    inline: bool,
    omit_empty: bool,
    card: Card,
    ty: Ty,
}

type Schema = HashMap<&'static str, Vec<Field>>;

/// The parsed [`MESSAGES`] table, built once.
fn schema() -> Result<&'static Schema, ProtoError> {
    static SCHEMA: OnceLock<Result<Schema, String>> = OnceLock::new();
    SCHEMA.get_or_init(parse_schema).as_ref().map_err(|e| ProtoError::Table(e.clone()))
}

fn parse_schema() -> Result<Schema, String> {
    let mut schema: Schema = HashMap::new();
    let mut current: Option<&'static str> = None;
    for line in MESSAGES.lines() {
        // A field never spans lines, so each line is a run of `;`-separated fields.
        let fields = match line.strip_prefix(' ') {
            Some(more) => more,
            None => {
                let (name, fields) = line.split_once(':').ok_or_else(|| format!("no ':' in {line:?}"))?;
                if schema.insert(name, Vec::new()).is_some() {
                    return Err(format!("{name} listed twice"));
                }
                current = Some(name);
                fields
            }
        };
        let name = current.ok_or("continuation line before any message")?;
        let list = schema.entry(name).or_default();
        for f in fields.split(';').map(str::trim).filter(|f| !f.is_empty()) {
            list.push(parse_field(f).ok_or_else(|| format!("{name}: bad field {f:?}"))?);
        }
    }
    Ok(schema)
}

fn parse_field(spec: &'static str) -> Option<Field> {
    let mut parts = spec.split(' ');
    let num = parts.next()?.parse().ok()?;
    let name = parts.next()?;
    let code = parts.next()?;
    if parts.next().is_some() {
        return None;
    }
    let (json, omit_empty) = match name.strip_suffix('?') {
        Some(json) => (json, true),
        None => (name, false),
    };
    let (card, rest) = match code.split_at_checked(1)? {
        ("*", rest) => (Card::Ptr, rest),
        ("[", rest) => (Card::List, rest),
        ("{", rest) => (Card::Map, rest),
        _ => (Card::Value, code),
    };
    let ty = match rest {
        "s" => Ty::Str,
        "b" => Ty::Bool,
        "i" => Ty::I32,
        "l" => Ty::I64,
        "y" => Ty::Bytes,
        "[s" if card == Card::Map => Ty::StrList,
        "Time" => Ty::Time,
        "MicroTime" => Ty::MicroTime,
        "Quantity" => Ty::Quantity,
        "IntOrString" => Ty::IntOrString,
        "FieldsV1" => Ty::FieldsV1,
        msg if msg.contains('.') => Ty::Msg(msg),
        _ => return None,
    };
    Some(Field { num, json: if json == "-" { "" } else { json }, inline: json == "-", omit_empty, card, ty })
}

fn fields_of(schema: &'static Schema, name: &str) -> Result<&'static [Field], ProtoError> {
    schema.get(name).map(Vec::as_slice).ok_or_else(|| ProtoError::Table(format!("unknown message {name}")))
}

/// Protobuf wire types.
const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const LEN: u8 = 2;
const START_GROUP: u8 = 3;
const END_GROUP: u8 = 4;
const FIXED32: u8 = 5;

/// A cursor over protobuf bytes, with the checks of the Go generated unmarshallers.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    fn done(&self) -> bool {
        self.pos >= self.buf.len()
    }

    fn varint(&mut self) -> Result<u64, ProtoError> {
        let mut v = 0u64;
        let mut shift = 0;
        loop {
            if shift >= 64 {
                return Err(ProtoError::IntOverflow);
            }
            let b = *self.buf.get(self.pos).ok_or(ProtoError::UnexpectedEof)?;
            self.pos += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Ok(v);
            }
            shift += 7;
        }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], ProtoError> {
        let end = self.pos.checked_add(n).ok_or(ProtoError::UnexpectedEof)?;
        let out = self.buf.get(self.pos..end).ok_or(ProtoError::UnexpectedEof)?;
        self.pos = end;
        Ok(out)
    }

    fn bytes(&mut self) -> Result<&'a [u8], ProtoError> {
        let len = self.varint()?;
        if i64::try_from(len).is_err() {
            return Err(ProtoError::NegativeLength);
        }
        self.take(usize::try_from(len).map_err(|_| ProtoError::UnexpectedEof)?)
    }

    /// Read a field tag as `(number, wire type)`; `message` names errors.
    fn tag(&mut self, message: &str) -> Result<(u32, u8), ProtoError> {
        let key = self.varint()?;
        let wire = (key & 7) as u8;
        // Go reads the number as int32(key >> 3).
        let num = (key >> 3) as u32 as i32;
        let short = message.rsplit('.').next().unwrap_or(message);
        if wire == END_GROUP {
            return Err(ProtoError::EndGroup(short.to_string()));
        }
        if num <= 0 {
            return Err(ProtoError::IllegalTag { message: short.to_string(), tag: i64::from(num), wire });
        }
        Ok((num as u32, wire))
    }

    /// Skip the value of an unknown field (groups included).
    fn skip(&mut self, wire: u8) -> Result<(), ProtoError> {
        let mut depth = 0u32;
        let mut wire = wire;
        loop {
            match wire {
                VARINT => {
                    self.varint()?;
                }
                FIXED64 => {
                    self.take(8)?;
                }
                LEN => {
                    self.bytes()?;
                }
                START_GROUP => depth += 1,
                // `tag` rejects END_GROUP at depth 0, so this only closes an open group.
                END_GROUP => depth = depth.saturating_sub(1),
                FIXED32 => {
                    self.take(4)?;
                }
                other => return Err(ProtoError::IllegalWireType(other)),
            }
            if depth == 0 {
                return Ok(());
            }
            wire = (self.varint()? & 7) as u8;
        }
    }
}

/// The `runtime.Unknown` envelope.
struct Unknown<'a> {
    api_version: String,
    kind: String,
    raw: &'a [u8],
}

impl<'a> Unknown<'a> {
    fn decode(data: &'a [u8]) -> Result<Self, ProtoError> {
        let mut out = Unknown { api_version: String::new(), kind: String::new(), raw: &[] };
        let mut r = Reader::new(data);
        while !r.done() {
            match r.tag("Unknown")? {
                (1, LEN) => {
                    let mut tm = Reader::new(r.bytes()?);
                    while !tm.done() {
                        match tm.tag("TypeMeta")? {
                            (1, LEN) => out.api_version = go_string(tm.bytes()?),
                            (2, LEN) => out.kind = go_string(tm.bytes()?),
                            (1 | 2, wire) => return Err(wrong_wire("typeMeta", wire)),
                            (_, wire) => tm.skip(wire)?,
                        }
                    }
                }
                (2, LEN) => out.raw = r.bytes()?,
                // contentEncoding / contentType: not used by the apiserver's decoder.
                (3 | 4, LEN) => {
                    r.bytes()?;
                }
                (1..=4, wire) => return Err(wrong_wire("raw", wire)),
                (_, wire) => r.skip(wire)?,
            }
        }
        Ok(out)
    }
}

fn wrong_wire(field: &str, wire: u8) -> ProtoError {
    ProtoError::WrongWireType { field: field.to_string(), wire }
}

/// Decode message `name` from `buf`, merging into `out` (as Go's generated `Unmarshal` does:
/// scalars overwrite, repeated fields append, embedded messages merge).
fn decode_message(
    schema: &'static Schema,
    name: &str,
    buf: &[u8],
    out: &mut Map<String, Value>,
) -> Result<(), ProtoError> {
    let fields = fields_of(schema, name)?;
    let mut r = Reader::new(buf);
    while !r.done() {
        let (num, wire) = r.tag(name)?;
        let Some(f) = fields.iter().find(|f| f.num == num) else {
            r.skip(wire)?;
            continue;
        };
        match (f.card, f.ty) {
            (Card::Value | Card::Ptr, Ty::Msg(sub)) => {
                let bytes = expect_len(f, wire, &mut r)?;
                if f.inline {
                    decode_message(schema, sub, bytes, out)?;
                } else {
                    let slot = out.entry(f.json).or_insert_with(|| Value::Object(Map::new()));
                    if !slot.is_object() {
                        *slot = Value::Object(Map::new());
                    }
                    if let Value::Object(m) = slot {
                        decode_message(schema, sub, bytes, m)?;
                    }
                }
            }
            (Card::Value | Card::Ptr, ty) => {
                let v = decode_value(schema, f, ty, wire, &mut r)?;
                out.insert(f.json.to_string(), v);
            }
            (Card::List, Ty::Bool | Ty::I32 | Ty::I64) if wire == LEN => {
                let mut packed = Reader::new(r.bytes()?);
                let mut items = Vec::new();
                while !packed.done() {
                    items.push(decode_value(schema, f, f.ty, VARINT, &mut packed)?);
                }
                if !items.is_empty() {
                    append(out, f.json, items);
                }
            }
            (Card::List, ty) => {
                let v = decode_value(schema, f, ty, wire, &mut r)?;
                append(out, f.json, vec![v]);
            }
            (Card::Map, ty) => {
                let mut entry = Reader::new(expect_len(f, wire, &mut r)?);
                let mut key = String::new();
                let mut value = None;
                while !entry.done() {
                    match entry.tag(name)? {
                        (1, LEN) => key = go_string(entry.bytes()?),
                        (2, w) => value = Some(decode_value(schema, f, ty, w, &mut entry)?),
                        (1, w) => return Err(wrong_wire(f.json, w)),
                        (_, w) => entry.skip(w)?,
                    }
                }
                let value = match value {
                    Some(v) => v,
                    None => zero_value(schema, ty)?,
                };
                let slot = out.entry(f.json).or_insert_with(|| Value::Object(Map::new()));
                if !slot.is_object() {
                    *slot = Value::Object(Map::new());
                }
                if let Value::Object(m) = slot {
                    m.insert(key, value);
                }
            }
        }
    }
    Ok(())
}

fn expect_len<'a>(f: &Field, wire: u8, r: &mut Reader<'a>) -> Result<&'a [u8], ProtoError> {
    if wire != LEN {
        return Err(wrong_wire(f.json, wire));
    }
    r.bytes()
}

fn append(out: &mut Map<String, Value>, key: &str, items: Vec<Value>) {
    match out.get_mut(key) {
        Some(Value::Array(existing)) => existing.extend(items),
        _ => {
            out.insert(key.to_string(), Value::Array(items));
        }
    }
}

/// Decode one value of type `ty` (a scalar, a special type, or a whole message).
fn decode_value(
    schema: &'static Schema,
    f: &Field,
    ty: Ty,
    wire: u8,
    r: &mut Reader<'_>,
) -> Result<Value, ProtoError> {
    let want = match ty {
        Ty::Bool | Ty::I32 | Ty::I64 => VARINT,
        _ => LEN,
    };
    if wire != want {
        return Err(wrong_wire(f.json, wire));
    }
    Ok(match ty {
        Ty::Bool => Value::Bool(r.varint()? != 0),
        // Go truncates to int32 for int32 fields.
        Ty::I32 => Value::from(r.varint()? as u32 as i32),
        Ty::I64 => Value::from(r.varint()? as i64),
        Ty::Str => Value::String(go_string(r.bytes()?)),
        Ty::Bytes => Value::String(base64(r.bytes()?)),
        Ty::Time => decode_time(r.bytes()?, false)?,
        Ty::MicroTime => decode_time(r.bytes()?, true)?,
        Ty::Quantity => decode_quantity(r.bytes()?)?,
        Ty::IntOrString => decode_int_or_string(r.bytes()?)?,
        Ty::FieldsV1 => decode_fields_v1(r.bytes()?)?,
        Ty::StrList => {
            let mut items = Vec::new();
            let mut sub = Reader::new(r.bytes()?);
            while !sub.done() {
                match sub.tag("ExtraValue")? {
                    (1, LEN) => items.push(Value::String(go_string(sub.bytes()?))),
                    (1, w) => return Err(wrong_wire("items", w)),
                    (_, w) => sub.skip(w)?,
                }
            }
            if items.is_empty() { Value::Null } else { Value::Array(items) }
        }
        Ty::Msg(sub) => {
            let mut m = Map::new();
            decode_message(schema, sub, r.bytes()?, &mut m)?;
            Value::Object(m)
        }
    })
}

/// Apply Go `encoding/json` presence rules to a decoded message: drop zero `omitempty`
/// scalars, add zero values for absent non-`omitempty` fields, recurse into structs.
fn finalize(schema: &'static Schema, name: &str, obj: &mut Map<String, Value>) -> Result<(), ProtoError> {
    for f in fields_of(schema, name)? {
        if f.inline {
            if let Ty::Msg(sub) = f.ty {
                finalize(schema, sub, obj)?;
            }
            continue;
        }
        match (obj.get_mut(f.json), f.card) {
            (Some(v), Card::Value | Card::Ptr) => {
                if let (Ty::Msg(sub), Value::Object(m)) = (f.ty, &mut *v) {
                    finalize(schema, sub, m)?;
                } else if f.card == Card::Value && f.omit_empty && is_scalar(f.ty) && is_zero(v) {
                    obj.remove(f.json);
                }
            }
            (Some(Value::Array(items)), Card::List) => {
                if let Ty::Msg(sub) = f.ty {
                    for item in items.iter_mut() {
                        if let Value::Object(m) = item {
                            finalize(schema, sub, m)?;
                        }
                    }
                }
            }
            (Some(Value::Object(entries)), Card::Map) => {
                if let Ty::Msg(sub) = f.ty {
                    for item in entries.values_mut() {
                        if let Value::Object(m) = item {
                            finalize(schema, sub, m)?;
                        }
                    }
                }
            }
            (Some(_), _) => {}
            (None, Card::Value) => {
                let zero = match f.ty {
                    // Structs ignore omitempty in encoding/json.
                    Ty::Msg(_) | Ty::Time | Ty::MicroTime | Ty::Quantity | Ty::IntOrString => {
                        Some(zero_value(schema, f.ty)?)
                    }
                    // A nil []byte, nil slice or nil RawMessage-like value.
                    Ty::Bytes | Ty::StrList | Ty::FieldsV1 => (!f.omit_empty).then_some(Value::Null),
                    Ty::Str | Ty::Bool | Ty::I32 | Ty::I64 => {
                        (!f.omit_empty).then(|| zero_value(schema, f.ty)).transpose()?
                    }
                };
                if let Some(zero) = zero {
                    obj.insert(f.json.to_string(), zero);
                }
            }
            (None, _) => {
                if !f.omit_empty {
                    obj.insert(f.json.to_string(), Value::Null);
                }
            }
        }
    }
    Ok(())
}

/// The JSON of a Go zero value of type `ty`.
fn zero_value(schema: &'static Schema, ty: Ty) -> Result<Value, ProtoError> {
    Ok(match ty {
        Ty::Str => Value::String(String::new()),
        Ty::Bool => Value::Bool(false),
        Ty::I32 | Ty::I64 | Ty::IntOrString => Value::from(0),
        Ty::Quantity => Value::String("0".into()),
        Ty::Bytes => Value::String(String::new()),
        Ty::Time | Ty::MicroTime | Ty::FieldsV1 | Ty::StrList => Value::Null,
        Ty::Msg(name) => {
            let mut m = Map::new();
            finalize(schema, name, &mut m)?;
            Value::Object(m)
        }
    })
}

/// Types whose Go zero value `omitempty` drops (structs are never dropped).
fn is_scalar(ty: Ty) -> bool {
    matches!(ty, Ty::Str | Ty::Bool | Ty::I32 | Ty::I64 | Ty::Bytes)
}

fn is_zero(v: &Value) -> bool {
    match v {
        Value::String(s) => s.is_empty(),
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_i64() == Some(0),
        Value::Null => true,
        _ => false,
    }
}

/// Bytes to a string the way Go's JSON encoder prints a Go string: each byte of an invalid
/// UTF-8 sequence becomes U+FFFD.
fn go_string(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    let mut rest = bytes;
    loop {
        match std::str::from_utf8(rest) {
            Ok(s) => {
                out.push_str(s);
                return out;
            }
            Err(e) => {
                let (valid, bad) = rest.split_at(e.valid_up_to());
                out.push_str(std::str::from_utf8(valid).unwrap_or_default());
                let n = e.error_len().unwrap_or(bad.len());
                out.extend(std::iter::repeat_n('\u{fffd}', n));
                rest = &bad[n..];
            }
        }
    }
}

/// Standard base64 with padding, as Go's JSON encoder writes `[]byte`.
fn base64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// `metav1.Time` / `MicroTime`: a `Timestamp{1: seconds, 2: nanos}`; empty means the zero
/// time, which marshals as `null`.
fn decode_time(buf: &[u8], micro: bool) -> Result<Value, ProtoError> {
    if buf.is_empty() {
        return Ok(Value::Null);
    }
    let (mut secs, mut nanos) = (0i64, 0i32);
    let mut r = Reader::new(buf);
    while !r.done() {
        match r.tag("Timestamp")? {
            (1, VARINT) => secs = r.varint()? as i64,
            (2, VARINT) => nanos = r.varint()? as u32 as i32,
            (1, w) => return Err(wrong_wire("seconds", w)),
            (2, w) => return Err(wrong_wire("nanos", w)),
            (_, w) => r.skip(w)?,
        }
    }
    Ok(format_time(secs, nanos, micro)?.map_or(Value::Null, Value::String))
}

/// Format Unix `secs` + `nanos` as Go's `t.UTC().Format(RFC3339)` (or the RFC 3339
/// microsecond layout); `None` for Go's zero time (0001-01-01T00:00:00Z).
fn format_time(secs: i64, nanos: i32, micro: bool) -> Result<Option<String>, ProtoError> {
    // time.Unix normalises nanoseconds into [0, 1e9); so does jiff.
    let out_of_range = || ProtoError::TimeOutOfRange { seconds: secs, nanos };
    let t = jiff::Timestamp::from_second(secs)
        .and_then(|t| t.checked_add(jiff::SignedDuration::from_nanos(i64::from(nanos))))
        .map_err(|_| out_of_range())?;
    if t.as_second() == -62_135_596_800 && t.subsec_nanosecond() == 0 {
        return Ok(None);
    }
    let dt = t.to_zoned(jiff::tz::TimeZone::UTC).datetime();
    // Go pads a negative year to four digits after the sign (`-0001`); jiff's `%Y` counts
    // the sign as one of the four.
    let year = i32::from(dt.year());
    let year = if year < 0 { format!("-{:04}", -year) } else { format!("{year:04}") };
    let frac = if micro { format!(".{:06}", dt.subsec_nanosecond() / 1000) } else { String::new() };
    Ok(Some(format!(
        "{year}-{:02}-{:02}T{:02}:{:02}:{:02}{frac}Z",
        dt.month(),
        dt.day(),
        dt.hour(),
        dt.minute(),
        dt.second()
    )))
}

/// `resource.Quantity{1: string}`. The string is validated like `ParseQuantity` and passed
/// through; clients send the canonical form (`Quantity.String()`). Empty means zero, `"0"`.
fn decode_quantity(buf: &[u8]) -> Result<Value, ProtoError> {
    let mut r = Reader::new(buf);
    let mut out = None;
    while !r.done() {
        match r.tag("Quantity")? {
            (1, LEN) => {
                let s = go_string(r.bytes()?);
                check_quantity(&s)?;
                out = Some(s);
            }
            (1, w) => return Err(wrong_wire("string", w)),
            (_, w) => r.skip(w)?,
        }
    }
    Ok(Value::String(out.unwrap_or_else(|| "0".into())))
}

/// Check a quantity string: `[+-]digits[.digits]suffix` with a known suffix.
fn check_quantity(s: &str) -> Result<(), ProtoError> {
    let format = || ProtoError::QuantityFormat(s.to_string());
    let b = s.as_bytes();
    let digits = |from: usize| from + b[from..].iter().take_while(|c| c.is_ascii_digit()).count();
    let mut pos = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    if pos == b.len() && pos > 0 {
        // "+" or "-" alone parses as zero in Go.
        return Ok(());
    }
    if b.is_empty() {
        return Err(format());
    }
    pos = digits(pos);
    if b.get(pos) == Some(&b'.') {
        pos = digits(pos + 1);
    }
    let suffix = &s[pos..];
    let letters = suffix.bytes().take_while(|c| b"eEinumkKMGTP".contains(c)).count();
    let mut end = pos + letters;
    if matches!(b.get(end), Some(b'+' | b'-')) {
        end += 1;
    }
    if digits(end) != b.len() {
        return Err(format());
    }
    let ok = match suffix {
        "" | "n" | "u" | "m" | "k" | "M" | "G" | "T" | "P" | "E" => true,
        "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei" => true,
        exp => {
            let digits = exp.strip_prefix(['e', 'E']).unwrap_or("");
            let digits = digits.strip_prefix(['+', '-']).unwrap_or(digits);
            !digits.is_empty() && digits.bytes().all(|c| c.is_ascii_digit())
        }
    };
    if ok { Ok(()) } else { Err(ProtoError::QuantitySuffix(s.to_string())) }
}

/// `intstr.IntOrString{1: type, 2: intVal, 3: strVal}` → number (type 0) or string (type 1).
fn decode_int_or_string(buf: &[u8]) -> Result<Value, ProtoError> {
    let (mut ty, mut int_val, mut str_val) = (0i64, 0i32, String::new());
    let mut r = Reader::new(buf);
    while !r.done() {
        match r.tag("IntOrString")? {
            (1, VARINT) => ty = r.varint()? as i64,
            (2, VARINT) => int_val = r.varint()? as u32 as i32,
            (3, LEN) => str_val = go_string(r.bytes()?),
            (n @ 1..=3, w) => {
                return Err(wrong_wire(["type", "intVal", "strVal"][n as usize - 1], w));
            }
            (_, w) => r.skip(w)?,
        }
    }
    match ty {
        0 => Ok(Value::from(int_val)),
        1 => Ok(Value::String(str_val)),
        other => Err(ProtoError::IntOrStringType(other)),
    }
}

/// `metav1.FieldsV1{1: Raw}`: the raw bytes are the JSON itself.
fn decode_fields_v1(buf: &[u8]) -> Result<Value, ProtoError> {
    let mut r = Reader::new(buf);
    let mut raw = None;
    while !r.done() {
        match r.tag("FieldsV1")? {
            (1, LEN) => raw = Some(r.bytes()?),
            (1, w) => return Err(wrong_wire("Raw", w)),
            (_, w) => r.skip(w)?,
        }
    }
    match raw {
        None => Ok(Value::Null),
        Some(raw) => serde_json::from_slice(raw).map_err(|e| ProtoError::FieldsV1(e.to_string())),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
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
        let schema = schema().unwrap();
        assert_eq!(schema.len(), MESSAGES.lines().filter(|l| !l.starts_with(' ')).count());
        assert_eq!(schema.len(), 280);
        for root in ROOTS {
            assert!(schema.contains_key(root), "{root}");
        }
        for (_, prefix) in GROUP_VERSIONS {
            assert!(ROOTS.iter().any(|r| r.starts_with(&format!("{prefix}."))) || *prefix == "meta");
        }
        // Depth-first walk: every referenced message exists and no message contains itself,
        // so decoding recursion is bounded by the table.
        fn walk(schema: &Schema, name: &str, stack: &mut Vec<String>) {
            assert!(!stack.iter().any(|s| s == name), "cycle through {name}");
            stack.push(name.to_string());
            for f in &schema[name] {
                if let Ty::Msg(sub) = f.ty {
                    assert!(schema.contains_key(sub), "{name} -> {sub}");
                    walk(schema, sub, stack);
                }
                assert!(!f.inline || matches!(f.ty, Ty::Msg(_)));
            }
            stack.pop();
        }
        for name in schema.keys() {
            walk(schema, name, &mut Vec::new());
        }
        let fields = &schema["core.PodSpec"];
        let containers = fields.iter().find(|f| f.num == 2).unwrap();
        assert_eq!(
            (containers.json, containers.omit_empty, containers.card),
            ("containers", false, Card::List)
        );
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
        let v =
            dec("v1", "Service", meta("svc", "default").msg(2, spec).msg(3, Enc::new().msg(1, Enc::new())));
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
        let path = Enc::new()
            .str(1, "/bar")
            .msg(2, backend("svc1", Enc::new().str(1, "").int(2, 8080)))
            .str(3, "Exact");
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
        let v = dec(
            "authentication.k8s.io/v1",
            "SelfSubjectReview",
            meta("", "").msg(2, Enc::new().msg(1, user)),
        );
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
        let unknown = Enc::new()
            .raw(&junk.0)
            .msg(1, Enc::new().str(1, "v1").raw(&junk.0).str(2, "ConfigMap"))
            .msg(2, raw);
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
        let raw =
            Enc::new().msg(2, Enc::new().msg(1, Enc::new().str(1, "pods").msg(2, Enc::new().str(1, "x"))));
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
}
