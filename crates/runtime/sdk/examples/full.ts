// Every SDK function, with type-level checks of what the inference gives.
import {
  resource, z, operator, apply, patch, getObserved, listObserved, getStatus, setStatus, setCondition,
  event, addFinalizer, removeFinalizer, randomString, fetch, log, Env, Values, Result, now, kindOf,
  Secret, ConfigMap, Deployment, Service, StatefulSet, Job, CronJob, Ingress, PersistentVolumeClaim,
  ServiceAccount, Pod, Namespace, DaemonSet, Role, RoleBinding, NetworkPolicy, ClusterRole,
  type KindObject, type Deployment as DeploymentT, type ZodError,
} from "ctop";

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
function expectType<T>(_value: T): void {}
const assert = <C extends true>(_c?: C) => {};

const Endpoint = z.object({ host: z.string().min(1).max(253), port: z.int().min(1).max(65535) });

export const database = resource("db.example.com/v1alpha1", "Database", {
  scope: "Namespaced",
  shortNames: ["db"],
  plural: "databases",
  printerColumns: [{ name: "Phase", type: "string", jsonPath: ".status.phase" }],
  spec: {
    engine: z.enum(["postgres", "mysql"]).describe("Database engine"),
    version: z.string().regex(/^\d+(\.\d+)*$/).default("16"),
    replicas: z.number().int().min(1).max(9).default(1),
    storage: z.object({ size: z.string(), className: z.string().optional() }),
    users: z.array(z.object({ name: z.string(), admin: z.boolean().default(false) })).min(1).max(16),
    labels: z.record(z.string()).optional(),
    extra: z.any(),
    tier: z.literal("gold").nullable(),
    params: z.object({}).passthrough().optional(),
  },
  status: { phase: z.enum(["Pending", "Ready"]), endpoint: Endpoint.optional(), attempts: z.int() },
});
type Database = KindObject<typeof database>;

// The inference: spec fields are typed from the z shapes, defaults make them required.
assert<Equal<Database["spec"]["engine"], "postgres" | "mysql">>();
assert<Equal<Database["spec"]["replicas"], number>>();
assert<Equal<Database["spec"]["version"], string>>();
assert<Equal<Database["spec"]["storage"], { size: string; className?: string | undefined }>>();
assert<Equal<Database["spec"]["users"], { name: string; admin: boolean }[]>>();
assert<Equal<Database["spec"]["labels"], { [key: string]: string } | undefined>>();
assert<Equal<Database["spec"]["tier"], "gold" | null>>();
assert<Equal<z.infer<typeof Endpoint>, { host: string; port: number }>>();
assert<Equal<z.input<typeof database.spec>["replicas"], number | undefined>>();

// z at run time: parse, safeParse, errors, OpenAPI.
const parsed = database.spec.parse({ engine: "mysql", storage: { size: "1Gi" }, users: [{ name: "a" }], tier: null });
expectType<number>(parsed.replicas);
const r = Endpoint.safeParse({ host: "", port: 0 });
if (!r.success) {
  const e: ZodError = r.error;
  log.warn("invalid endpoint", { issues: e.issues.map((i) => `${i.path.join(".")}: ${i.message}`) });
} else {
  expectType<number>(r.data.port);
}
const openapi = Endpoint.toOpenAPI();
expectType<string[] | undefined>(openapi.required);

const Cert = kindOf<{ apiVersion: string; kind: string; metadata: { name?: string }; spec?: { dnsNames: string[] } }>(
  "cert-manager.io/v1", "Certificate");

operator(database, { name: "database" })
  .every("10m")
  .manages(StatefulSet, Service, Secret)
  .manages([Job, CronJob])
  .reads(ConfigMap, "v1/Namespace", { apiVersion: "v1", kind: "Pod" })
  .reads(ServiceAccount, [PersistentVolumeClaim], { metadataOnly: true })
  .watches(ConfigMap, (cm) => cm.metadata.labels?.["db.example.com/name"], {
    labelSelector: { "db.example.com/managed": "true" },
    predicate: { or: ["GenerationChanged", "LabelChanged"] },
  })
  .watches(Namespace, { predicate: "LabelChanged" })
  .watches(Cert, (c) => ({ name: c.metadata.name ?? "", namespace: "db" }))
  .permission({ apiGroups: [""], resources: ["events"], verbs: ["create", "patch"] })
  .onStart(() => {
    log.info("starting", { at: now(), env: Env.HOME, values: Values.anything });
  })
  .validate((cr, old) => {
    if (old && old.spec.engine !== cr.spec.engine) return "engine cannot change";
    if (cr.spec.replicas > 5) return { allowed: true, warnings: ["many replicas"] };
    return true;
  })
  .mutate((cr) => {
    cr.metadata.labels = { ...cr.metadata.labels, "db.example.com/engine": cr.spec.engine };
    return cr;
  })
  .finalize((cr) => {
    event(cr, { type: "Normal", reason: "Cleanup", message: "dropping backups" });
    removeFinalizer(cr);
    return Result.ok();
  })
  .reconcile((cr) => {
    expectType<number>(cr.spec.replicas);
    expectType<"Pending" | "Ready" | undefined>(cr.status?.phase);
    addFinalizer(cr);

    const password = getObserved(Secret, `${cr.metadata.name}-pw`)?.data?.password ?? randomString(24);
    apply(Secret({ metadata: { name: `${cr.metadata.name}-pw` }, stringData: { password } }));
    apply(Service({ metadata: { name: cr.metadata.name }, spec: { selector: { app: "db" }, ports: [{ port: 5432 }] } }));
    const sts = apply(StatefulSet({
      metadata: { name: cr.metadata.name, labels: { app: "db" } },
      spec: {
        replicas: cr.spec.replicas,
        serviceName: cr.metadata.name,
        selector: { matchLabels: { app: "db" } },
        template: {
          metadata: { labels: { app: "db" } },
          spec: { containers: [{ name: "db", image: `${cr.spec.engine}:${cr.spec.version}`, ports: [{ containerPort: 5432 }] }] },
        },
        volumeClaimTemplates: [{ metadata: { name: "data" }, spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: cr.spec.storage.size } } } }],
      },
    }));
    expectType<number | undefined>(sts.spec?.replicas);
    apply(database({ metadata: { name: "replica" }, spec: { engine: "postgres", storage: { size: "1Gi" }, users: [{ name: "x" }], tier: "gold" } }));
    patch(ConfigMap({ metadata: { name: "shared", namespace: "kube-public" }, data: { owner: cr.metadata.name ?? "" } }));

    const deployments: DeploymentT[] = listObserved(Deployment, { labels: { app: "db" } });
    const pods = listObserved(Pod, (p) => p.status?.phase === "Running");
    const ns = getObserved(Namespace, "db");
    const anyObj = getObserved("v1/Endpoints", "x");
    log.debug("observed", { deployments: deployments.length, pods: pods.length, ns: ns?.status?.phase, any: anyObj?.subsets });

    const res = fetch("http://backup.internal/api", { method: "POST", body: { db: cr.metadata.name }, timeout: "5s" });
    if (!res.ok) {
      log.error("backup service", { status: res.status, type: res.headers.get("content-type") });
      return Result.error(`backup service returned ${res.status}`);
    }
    const body = res.json<{ lastBackup: string }>();
    expectType<string>(body.lastBackup);

    const prev = getStatus(cr);
    setStatus(cr, { phase: "Ready", attempts: (prev.attempts ?? 0) + 1 });
    setStatus(cr, { endpoint: { host: `${cr.metadata.name}.svc`, port: 5432 } });
    setCondition(cr, { type: "Ready", status: true, message: "all replicas up" });
    event(null, { type: "Warning", reason: "Slow", message: "took long" });
    if (cr.spec.replicas > 3) return Result.requeue("30s");
    return Result.ok();
  })
  .invariant("the StatefulSet follows the spec", (cr, observed) => {
    expectType<number>(cr.spec.replicas);
    const sts = observed.get(StatefulSet, cr.metadata.name);
    expectType<StatefulSet | undefined>(sts);
    if (!sts) return `no StatefulSet ${cr.metadata.name}`;
    return sts.spec?.replicas === cr.spec.replicas || `replicas ${sts.spec?.replicas} != ${cr.spec.replicas}`;
  })
  .invariant((cr, observed) => {
    const kinds: string[] = observed.children.map((c) => c.kind);
    const secrets = observed.list(Secret, { ownedBy: cr });
    const problems: string[] = [];
    if (!kinds.includes("Service")) problems.push("no Service");
    if (secrets.length !== 1) problems.push(`${secrets.length} Secrets`);
    return problems;
  })
  .invariant("status is set", (cr) => {
    if (!cr.status?.phase) return false;
  });

// A second controller for a built-in kind, with async handlers.
operator(Deployment)
  .reads(ServiceAccount, DaemonSet, Role, RoleBinding, NetworkPolicy, Ingress, PersistentVolumeClaim, ClusterRole)
  .reconcile(async (d) => {
    expectType<DeploymentT>(d);
    const replicas: number | undefined = d.spec?.replicas;
    console.log("deployment", d.metadata.name, replicas);
    return Result.requeue(60);
  });

// Negative checks, each must be an error.
operator(database).reconcile((cr) => {
  // @ts-expect-error replicas is a number
  cr.spec.replicas.toUpperCase();
  // @ts-expect-error not a declared status field
  setStatus(cr, { nope: 1 });
  // @ts-expect-error engine is an enum
  apply(database({ metadata: { name: "x" }, spec: { engine: "oracle", storage: { size: "1" }, users: [], tier: null } }));
  // @ts-expect-error Deployment needs a selector and a template
  apply(Deployment({ metadata: { name: "x" }, spec: { replicas: 1 } }));
  // @ts-expect-error unknown predicate
  operator(database).watches(Secret, null, { predicate: "Sometimes" });
  // @ts-expect-error default must match the type
  z.number().default("one");
  // @ts-expect-error the condition status is True/False/Unknown or boolean
  setCondition(cr, { type: "Ready", status: "Yes" });
  // @ts-expect-error an invariant is synchronous
  operator(database).invariant("async", async () => true);
  // @ts-expect-error an invariant returns messages, not numbers
  operator(database).invariant(() => 1);
});
