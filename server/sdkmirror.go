package server

// What the fast paths (readpath.go, callpath.go), the envelope check
// (envelope.go) and the error writer (errors.go) repeat of go-sdk, in one
// place to review when go.mod's go-sdk changes: TestSDKMirrorReviewed
// fails until sdkMirrorVersion names the version go.mod requires, and the
// differential tests (TestFastReadMatchesSDK, TestFastCallMatchesSDK) say
// whether the mirror still holds.
//
//   - The protocol versions both paths answer: versionModern (per-request
//     _meta, Mcp-Method and Mcp-Name headers, resultType, serverInfo _meta;
//     SEP-2575's HTTP statuses for errors) and versionLegacy.
//   - The _meta members go-sdk reads on a modern request (modernMetaOK;
//     the walk of envelope.Parse finds them by go-sdk's mcp.MetaKey names).
//   - The status of an error response on the modern version
//     (writeErrorResponse): 404 for -32601; 400 for -32602 and the version
//     and capability errors; 200 otherwise.
//   - The Accept and Content-Type rules of stateless JSON mode
//     (acceptsBoth, isJSONType), the headers go-sdk acts on (fastGate), and
//     the methods and params it serves (envelope.go's method table).
const sdkMirrorVersion = "v1.8.0"

const (
	versionModern = "2026-07-28"
	versionLegacy = "2025-11-25"
)
