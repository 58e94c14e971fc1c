// Must NOT type-check: each marked line is a type error the inference has to catch.
import { resource, z, operator, setStatus, Secret, apply } from "ctop";

const webApp = resource("apps.example.com/v1", "WebApp", {
  spec: { image: z.string(), replicas: z.number().int().default(1), mode: z.enum(["a", "b"]).optional() },
  status: { ready: z.boolean(), phase: z.enum(["Pending", "Running", "Failed"]) },
});

operator(webApp).reconcile((cr) => {
  const image: number = cr.spec.image; // ERROR-1: string is not number
  const replicas: string = cr.spec.replicas; // ERROR-2: number is not string
  const mode: "a" | "b" = cr.spec.mode; // ERROR-3: possibly undefined
  setStatus(cr, { phase: "Sleeping" }); // ERROR-4: not in the enum
  apply(Secret({ metadata: { name: "x" }, stringData: { token: 42 } })); // ERROR-5: values are strings
  cr.spec.nope; // ERROR-6: no such field
  void [image, replicas, mode];
});
