// kube-proxy-ts entrypoint: `kube-proxy-ts --help` lists every flag.
import { run } from "./app/run.ts";

process.exitCode = await run(process.argv.slice(2));
