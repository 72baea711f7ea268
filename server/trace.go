package server

import (
	"context"
	"reflect"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/resourced/resourced/internal/telemetry"
	"github.com/resourced/resourced/server/internal/envelope"
)

// traceMCP is the receiving middleware that gives each MCP request its
// span (internal/telemetry), parented by params._meta's traceparent when
// there is one; outermost, so the extension's upstream calls and the
// store's calls are under it. server.New adds it only when tracing is on.
func traceMCP(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		tool, tp, ts := "", "", ""
		if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && p != nil {
			tool = p.Name
		}
		if p := req.GetParams(); p != nil && !reflect.ValueOf(p).IsNil() {
			m := p.GetMeta()
			tp, ts = telemetry.MetaString(m["traceparent"]), telemetry.MetaString(m["tracestate"])
		}
		ctx, sp := telemetry.StartMCP(ctx, method, tool, tp, ts)
		defer sp.End()
		res, err := next(ctx, method, req)
		if o := outcome(res, err); o != "ok" {
			sp.Fail(o)
		}
		return res, err
	}
}

// traceFast is traceMCP for the fast read, which no middleware runs:
// the span of a resources/read, parented by the traceparent the walk
// found in its _meta. ctx itself and a no-op span when tracing is off.
func traceFast(ctx context.Context, method string, f *envelope.Fast) (context.Context, telemetry.Span) {
	if !telemetry.On() {
		return ctx, telemetry.Span{}
	}
	return telemetry.StartMCP(ctx, method, "", telemetry.MetaString(f.TraceParent), telemetry.MetaString(f.TraceState))
}

// fastMeta is the _meta the fast call hands traceMCP: the trace context
// the walk found; nil when tracing is off or there is none.
func fastMeta(f *envelope.Fast) mcp.Meta {
	if !telemetry.On() || f.TraceParent == nil {
		return nil
	}
	return mcp.Meta{"traceparent": telemetry.MetaString(f.TraceParent), "tracestate": telemetry.MetaString(f.TraceState)}
}
