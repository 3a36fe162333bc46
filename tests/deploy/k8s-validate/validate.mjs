// Validates every object of the given multi-document YAML files against the
// JSON schemas shipped by kubernetes-models (Kubernetes core/apps/batch/...)
// and @kubernetes-models/prometheus-operator (types, enums, required
// fields). An object whose apiVersion/kind has no schema is an error.
// Prints one line per object; exit status 1 on any error.
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";

function modulePath(apiVersion) {
  if (apiVersion.startsWith("monitoring.coreos.com/")) {
    return `@kubernetes-models/prometheus-operator/${apiVersion}`;
  }
  return `kubernetes-models/${apiVersion}`;
}

let failures = 0;
for (const file of process.argv.slice(2)) {
  for (const doc of parseAllDocuments(readFileSync(file, "utf8"))) {
    if (doc.errors.length > 0) {
      console.log(`FAIL ${file}: YAML: ${doc.errors[0].message}`);
      failures++;
      continue;
    }
    const object = doc.toJS();
    if (object === null) continue;
    const what = `${object.kind}/${object.metadata?.name} (${object.apiVersion})`;
    try {
      const models = await import(modulePath(object.apiVersion));
      const Model = models[object.kind];
      if (Model === undefined) throw new Error("no schema for this kind");
      new Model(object).validate();
      console.log(`ok   ${file}: ${what}`);
    } catch (error) {
      console.log(`FAIL ${file}: ${what}: ${error.message}`);
      failures++;
    }
  }
}
process.exit(failures > 0 ? 1 : 0);
