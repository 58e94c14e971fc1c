// Two resources and two operators in one script, a cluster-scoped CR, a z.object spec.
import { resource, z, operator, apply, ConfigMap, Namespace, Result, type KindObject } from "ctop";

const team = resource("org.example.com/v1", "Team", {
  scope: "Cluster",
  spec: z.object({ members: z.array(z.string()).nonempty(), quota: z.number().positive().optional() }),
});
const person = resource("org.example.com/v1", "Person", { spec: { team: z.string(), email: z.string().regex(/@/) } });

type Team = KindObject<typeof team>;
const t: Team["spec"]["members"] = ["a"];

operator(team).manages(Namespace).reconcile((cr) => {
  apply(Namespace({ metadata: { name: `team-${cr.metadata.name}` } }));
  return Result.ok();
});
operator(person)
  .watches(team, (tm) => tm.spec.members)
  .reconcile((p) => {
    apply(ConfigMap({ metadata: { name: p.metadata.name }, data: { email: p.spec.email, team: p.spec.team, first: t[0] ?? "" } }));
  });
