package gateway

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/resourced/resourced/internal/jsonwire"
)

// protocolVersionKey is the request _meta member naming the protocol of a
// 2026-07-28 request (stateless: every request carries it).
const protocolVersionKey = "io.modelcontextprotocol/protocolVersion"

// modernRequest reports whether req speaks 2026-07-28, where the results
// of tools/call, prompts/get and resources/read carry a resultType.
func modernRequest(req mcp.Request) bool {
	p := req.GetParams()
	if p == nil {
		return false
	}
	v, _ := p.GetMeta()[protocolVersionKey].(string)
	return v >= "2026-07-28"
}

// completed gives a result the front built itself the resultType its
// caller's protocol wants. go-sdk sets "complete" only on results of its
// own handlers, which the front's middleware bypasses, and the field is
// unexported (see hasResultType and retyped): on 2026-07-28 a result
// without one (an upstream on 2025-11-25, or one the front built) gets
// "complete" and one with one keeps it (an upstream's "input_required");
// on 2025-11-25 the member is dropped, since that protocol has none.
func completed(req mcp.Request) func(mcp.Result, error) (mcp.Result, error) {
	return func(res mcp.Result, err error) (mcp.Result, error) { return withResultType(req, res, err) }
}

func withResultType(req mcp.Request, res mcp.Result, err error) (mcp.Result, error) {
	if err != nil || res == nil {
		return res, err
	}
	switch res.(type) {
	case *mcp.CallToolResult, *mcp.GetPromptResult, *mcp.ReadResourceResult:
	default:
		return res, nil
	}
	has, err := hasResultType(res)
	if err != nil {
		return nil, err
	}
	modern := modernRequest(req)
	switch {
	case modern && !has:
		return retyped(res, true)
	case !modern && has:
		return retyped(res, false)
	}
	return res, nil
}

// The result's resultType is unexported and set only by its UnmarshalJSON,
// which decodes with go-sdk's decoder (a large buffer for every call): the
// first design sent every result through its JSON and back for it. Here
// the result's JSON is never decoded: whether it has one is read from the
// JSON of a copy without its exported fields (a few bytes), and a result
// with "complete" is a copy of a template that UnmarshalJSON made once,
// with the exported fields of res. The values are res's own, not a decoded
// copy of them (a Go struct in structuredContent keeps its field order).

// hasResultType reports whether res (a pointer to a result struct) has a
// resultType.
func hasResultType(res mcp.Result) (bool, error) {
	v := reflect.ValueOf(res).Elem()
	probe := reflect.New(v.Type()).Elem()
	probe.Set(v) // the unexported fields come along
	for i := range probe.NumField() {
		if probe.Type().Field(i).IsExported() {
			probe.Field(i).SetZero()
		}
	}
	b, err := json.Marshal(probe.Addr().Interface())
	if err != nil {
		return false, fmt.Errorf("gateway: result: %w", err)
	}
	has := false
	if err := jsonwire.Members(b, func(name string, _ []byte) error {
		has = has || name == "resultType"
		return nil
	}); err != nil {
		return false, fmt.Errorf("gateway: result: %w", err)
	}
	return has, nil
}

// completeTemplates are, per result type, a zero result whose resultType
// is "complete", made once by its UnmarshalJSON.
var completeTemplates sync.Map // reflect.Type -> reflect.Value (the struct)

// retyped is a copy of res's exported fields on a result with resultType
// "complete" (complete) or none.
func retyped(res mcp.Result, complete bool) (mcp.Result, error) {
	v := reflect.ValueOf(res).Elem()
	out := reflect.New(v.Type())
	if complete {
		tmpl, ok := completeTemplates.Load(v.Type())
		if !ok {
			t := reflect.New(v.Type())
			if err := json.Unmarshal([]byte(`{"resultType":"complete"}`), t.Interface()); err != nil {
				return nil, fmt.Errorf("gateway: result: %w", err)
			}
			tmpl, _ = completeTemplates.LoadOrStore(v.Type(), t.Elem())
		}
		out.Elem().Set(tmpl.(reflect.Value))
	}
	for i := range v.NumField() {
		if v.Type().Field(i).IsExported() {
			out.Elem().Field(i).Set(v.Field(i))
		}
	}
	return out.Interface().(mcp.Result), nil
}
