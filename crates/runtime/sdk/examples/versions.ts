// A resource with two versions: v2 is the hub (handlers see it), v1 converts to and from it.
import { resource, z, operator, type KindObject } from "ctop";

const cronTab = resource("batch.example.com/v2", "CronTab", {
  spec: { schedule: z.object({ minute: z.string(), hour: z.string() }), suspend: z.boolean().default(false) },
  status: { lastScheduleTime: z.string() },
});
const cronTabV1 = cronTab.addVersion("v1", {
  spec: { schedule: z.string(), suspend: z.boolean().default(false) },
  storage: true,
  deprecated: "use batch.example.com/v2",
  toHub: (o) => {
    const [minute = "*", hour = "*"] = o.spec.schedule.split(" ");
    return { ...o, spec: { ...o.spec, schedule: { minute, hour } } };
  },
  fromHub: (o) => ({ ...o, spec: { suspend: o.spec.suspend, schedule: `${o.spec.schedule.minute} ${o.spec.schedule.hour}` } }),
});

type V1 = KindObject<typeof cronTabV1>;
const old: V1 = cronTabV1({ metadata: { name: "x" }, spec: { schedule: "5 *" } }) as V1;
const apiVersion: "batch.example.com/v1" = old.apiVersion;
const last: string | undefined = old.status?.lastScheduleTime;
void apiVersion, last;

operator(cronTab).reconcile((cr) => {
  const minute: string = cr.spec.schedule.minute;
  void minute;
});
