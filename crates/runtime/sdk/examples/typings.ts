// The typing rules of issue 18, as code that must type-check with no casts.
import {
  resource, z, operator, apply, getObserved, listObserved, setStatus, cron, stringData, now, health,
  Deployment, Service, Secret, Job, ConfigMap, type Kind, type KubeObject, type KindObject, type Health,
  type HealthStatus,
} from "ctop";

const app = resource("apps.example.com/v1", "App", {
  spec: { image: z.string(), schedule: z.string().default("*/5 * * * *"), timeZone: z.string().optional() },
  status: { lastRun: z.string().optional(), owned: z.number().optional() },
});
const cluster = resource("apps.example.com/v1", "Platform", { scope: "Cluster", spec: { size: z.number() } });

// Generic code over child kinds, as authors write it.
function ownedCount(kind: Kind<KubeObject>, owner: KubeObject): number {
  return listObserved(kind, { ownedBy: owner }).length;
}
function namesOf<K extends Kind<any>>(kind: K, owner: KubeObject): string[] {
  return listObserved(kind, { ownedBy: owner }).map((o) => o.metadata.name);
}

operator(app)
  .manages(Deployment, Service, Secret, Job)
  .reconcile((cr) => {
    // A namespaced CR's namespace and every object's name are strings, not optional.
    const ns: string = cr.metadata.namespace;
    const name: string = cr.metadata.name;

    // Children of the CR, without filtering owner references by hand.
    const jobs = listObserved(Job, { ownedBy: cr });
    const active: string[] = jobs.filter((j) => !j.status?.completionTime).map((j) => j.metadata.name);

    // Observed objects carry the metadata the server sets.
    const dep = getObserved(Deployment, name);
    const uid: string | undefined = dep?.metadata.uid;
    const rv: string | undefined = dep?.metadata.resourceVersion;

    // Over several child kinds at once.
    let total = 0;
    for (const kind of [Deployment, Service, Secret] as const) total += ownedCount(kind, cr);
    const all = [Deployment, Service].flatMap((k) => namesOf(k, cr));

    // Secrets: read text, write text.
    const secret = getObserved(Secret, `${name}-creds`);
    const creds: { [key: string]: string } = secret ? stringData(secret) : {};
    apply(Secret({ metadata: { name: `${name}-creds`, namespace: ns }, stringData: { password: creds.password ?? "x" } }));

    // What apply returns has a name (apply refuses an object without one).
    const applied: string = apply(ConfigMap({ metadata: { name: `${name}-cfg` }, data: {} })).metadata.name;

    // Schedules in a time zone.
    const schedule = cron(cr.spec.schedule, { timeZone: cr.spec.timeZone ?? "UTC" });
    const next: Date | undefined = schedule.next(now());
    const missed: Date[] = schedule.between(cr.status?.lastRun ?? now() - 3_600_000, now(), { limit: 100 });
    setStatus(cr, { lastRun: missed.at(-1)?.toISOString(), owned: total + all.length });

    // Is a child ready? A child not there yet (undefined) is NotFound.
    const ready: Health = health(dep);
    const stuck: boolean = ready.status === "Failed" || jobs.some((j) => health(j).status === "Failed");
    const statuses: HealthStatus[] = [health(undefined).status, health(secret ?? null).status];

    void [active, uid, rv, next, applied, ready.reason, ready.message, stuck, statuses];
  });

operator(cluster).reconcile((cr) => {
  // A cluster-scoped CR has a name, and no namespace to rely on.
  const name: string = cr.metadata.name;
  const ns: string | undefined = cr.metadata.namespace;
  const cms: KindObject<typeof ConfigMap>[] = listObserved(ConfigMap, { ownedBy: cr });
  void [name, ns, cms];
});
