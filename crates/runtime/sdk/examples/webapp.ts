// The plan's example operator.ct, unchanged (the loader maps this specifier to "ctop").
import { resource, z, operator, getStatus, setStatus, getObserved, randomString, Result} from "https://github.com/cloudticon/k8s@master";

const webApp = resource("apps.example.com/v1", "WebApp", {
  scope: "Namespaced",
  spec: { image: z.string(), replicas: z.number().default(1) },
  status: { ready: z.boolean(), phase: z.enum(["Pending", "Running", "Failed"]) }
});

operator(webApp).every("5m").reconcile((cr) => {
  const tokenSecret = getObserved(secret, `${cr.metadata.name}-token`);
  const token = tokenSecret?.data?.token ?? randomString(32);
  // build desired resources...
  setStatus(cr, { ready: true, phase: "Running" });
  return Result.ok();
});
