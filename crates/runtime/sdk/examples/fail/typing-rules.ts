// Must NOT type-check: each marked line breaks one of the typing rules of examples/typings.ts.
import { resource, z, operator, listObserved, getObserved, cron, stringData, health, ConfigMap, Job } from "ctop";

const platform = resource("apps.example.com/v1", "Platform", { scope: "Cluster", spec: { size: z.number() } });
const app = resource("apps.example.com/v1", "App", { spec: { image: z.string() } });

operator(platform).reads(ConfigMap, { metadataOnly: "yes" }).reconcile((cr) => { // ERROR-11: metadataOnly is a boolean
  const ns: string = cr.metadata.namespace; // ERROR-1: a cluster-scoped CR may have no namespace
  void ns;
});

operator(app).reconcile((cr) => {
  const built: string = ConfigMap({ metadata: {} }).metadata.name; // ERROR-2: only stored objects surely have a name
  listObserved(Job, { ownedBy: cr.metadata.name }); // ERROR-3: ownedBy takes the owner object
  const cm = getObserved(ConfigMap, "x");
  const uid: string = cm.metadata.uid; // ERROR-4: getObserved may find nothing
  cron("*/5 * * * *", { timeZone: 1 }); // ERROR-5: a time zone is an IANA name
  const next: Date = cron("@daily").next(); // ERROR-6: a schedule may never run again
  const text: number = stringData({ data: { a: "eA==" } }).a; // ERROR-7: decoded values are strings
  const done: boolean = health(cm).status === "Ready"; // ERROR-9: a status is one of kstatus' six
  health("shop"); // ERROR-10: health takes the object, not its name
  void [built, uid, next, text, done];
});

app.addVersion("v2", {
  spec: { image: z.object({ repository: z.string() }) },
  toHub: (o) => ({ ...o, spec: { image: o.spec.image.repository } }),
  fromHub: (o) => ({ ...o, spec: { image: o.spec.image } }), // ERROR-8: a conversion returns the other version's spec
});
