// About 1.5 s of CPU, whatever the machine: hotLoop three times the work of
// warmLoop, until that much process CPU time has passed. The output is a
// fixed sum's, not the loops'.
function hotLoop(n) {
  let s = 0;
  for (let i = 0; i < 3 * n; i++) s = (s * 31 + (i ^ (s >>> 7))) | 0;
  return s;
}
function warmLoop(n) {
  let s = 1;
  for (let i = 0; i < n; i++) s = (s * 17 + (i ^ (s >>> 5))) | 0;
  return s;
}
const start = process.cpuUsage();
let total = 0;
while (true) {
  total ^= hotLoop(1e6) ^ warmLoop(1e6);
  const used = process.cpuUsage(start);
  if (used.user + used.system > 1.5e6) break;
}
console.log("sum", hotLoop(1000) ^ warmLoop(1000), total === 0.5 ? "" : "ok");
