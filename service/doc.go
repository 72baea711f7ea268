// Package service is resourced's service layer: what a caller may save,
// stat, delete and list, between the transports and the store. It owns
//
//   - the failure kinds and the Failure value every transport sends (the
//     structuredContent of a failed tool call, the body of a failed
//     upload), and the one mapping of store errors to failures
//     (writeFailure; Conflict differs per transport only in its Retry);
//   - the pure validators of what callers send (free text, media types,
//     sha256, base64, the one duration parser, list prefixes);
//   - the scheme policy (Scheme, the kinds, Limits with their defaults,
//     resolving a save's scheme, retention and visibility);
//   - the one writer of store objects (Put, PutStream): size and sha256
//     computed once, the stored JSON form for backends that keep one, the
//     tenant quota;
//   - the calls themselves: SaveSnapshot, SaveReport, PrepareUpload and
//     Precheck, Stat, Delete, List, with their cursors.
//
// It calls back through Options.OnChange and OnSaved, so the server keeps
// its notifications and metrics. It imports auth, store, uri, toolapi and
// internal/jsonwire (and oklog/ulid for snapshot ids), and must not import go-sdk, net/http or server: MCP
// tools (server/tools.go) and the /v1 HTTP API (server/upload.go) are thin
// adapters that decode their input into its request types and render its
// results.
package service
