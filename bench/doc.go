// Package bench holds resourced's benchmarks and nothing a program imports:
//
//   - cmd/resourced-bench, the load tool: raw JSON-RPC over Streamable HTTP
//     against a running server, with ratios to an in-process net/http
//     ceiling;
//   - run.sh, which builds and starts the server and runs every scenario;
//   - Go benchmarks of the hot paths of a read (hotpath_test.go) and a CPU
//     profile of an in-process server under the load tool (profile_test.go).
//
// See README.md for how to run them and the recorded results.
package bench
