// Package envelope is the JSON-RPC envelope check that runs on every /mcp
// POST before go-sdk sees the body. go-sdk v1.8.0 decodes only the first JSON value of a body (answering
// "{…} trailing" and dropping a second message), reads ids as float64
// (1.5 becomes 1, 2^53+1 becomes 2^53, 1e30 becomes -2^63), and takes a
// message with an id and no method for a response (202, no answer). And
// encoding/json would read "METHOD" as "method" where go-sdk does not, so
// the scope check must see the keys exactly as go-sdk will. So: the body
// must be one JSON value; every message's members are read with their
// exact names, none twice; an id is a string or an integer JSON can carry
// exactly (|n| < 2^53); a message with an id has a method, a result or an
// error. A body that is not UTF-8 is not JSON (RFC 8259 §8.1), and an id
// whose escapes hold half a surrogate pair is refused: go-sdk would
// answer either with U+FFFD in place of what was sent.
package envelope

//lint:file-ignore SA1019 logging and roots are still served to 2025-11-25 clients during the deprecation window (SEP-2577)

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/resourced/resourced/internal/jsonwire"
	"github.com/resourced/resourced/server/internal/mcptool"
)

// Beyond that, what go-sdk would answer with Go's words (a params value of
// the wrong type: "into a *mcp.ReadResourceParams"; a method that is not a
// string: "jsonrpc2.wireDecode"; an unknown method: a text/plain 400) is
// answered here in JSON-RPC's: no object anywhere in the body names a
// member twice (encoding/json would keep the last); jsonrpc is "2.0"; a
// method is a string that go-sdk serves (-32601 otherwise; an unknown
// notification is accepted and ignored, as JSON-RPC wants); params, when
// present, decode into what the method takes, else -32602 naming the
// member and the JSON type it needs; a request whose method requires
// params has them (not absent, not null), else -32602.

// Message is what the envelope check reads of one JSON-RPC message.
type Message struct {
	Method, Tool string
	HasID        bool
	HasMethod    bool
	ID           []byte // raw JSON; nil when absent
	Params       []byte // raw JSON; nil when absent
	Fast         Fast   // what the fast paths take; zero when they take nothing

	// paramsErr is what the walk found wrong with params that are an
	// object, for Check: the kinds of a tools/call's or resources/read's
	// members, inputResponses included, or another method's
	// inputResponses.
	paramsErr error
	// inBatch: the message is an element of a batch, which go-sdk refuses
	// whole, in plain text, whatever the message holds.
	inBatch bool
}

// Error is a body that is not acceptable JSON-RPC; its text is the
// reason given to the client.
type Error struct{ Reason string }

func (e *Error) Error() string { return e.Reason }

// NotUTF8Error is a body with bytes that are not UTF-8, which makes it not
// JSON (RFC 8259 §8.1), though json.Valid takes it and encoding/json, as
// go-sdk, decodes them into U+FFFD. It is a jsonwire.ErrSyntax.
type NotUTF8Error struct {
	Offset int  // of the first byte that is not part of a character
	Byte   byte // that byte
}

func (e *NotUTF8Error) Error() string {
	return "the body is not UTF-8: byte " + strconv.Itoa(e.Offset) + " (0x" + hex2(e.Byte) + ") is not part of a character"
}

func (e *NotUTF8Error) Unwrap() error { return jsonwire.ErrSyntax }

func hex2(b byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[b>>4], digits[b&15]})
}

// maxSafeID is the largest integer id every JSON implementation carries
// exactly (2^53 - 1).
const maxSafeID = 1<<53 - 1

// serverMethods are the methods go-sdk v1.8.0 serves, each with the type
// its params decode into (its serverMethodInfos).
var serverMethods = map[string]func() any{
	"completion/complete":              func() any { return new(mcp.CompleteParams) },
	"server/discover":                  func() any { return new(mcp.DiscoverParams) },
	"initialize":                       func() any { return new(mcp.InitializeParams) },
	"ping":                             func() any { return new(mcp.PingParams) },
	"prompts/list":                     func() any { return new(mcp.ListPromptsParams) },
	"prompts/get":                      func() any { return new(mcp.GetPromptParams) },
	"tools/list":                       func() any { return new(mcp.ListToolsParams) },
	"tools/call":                       nil, // by kind only (Message.paramsErr)
	"resources/list":                   func() any { return new(mcp.ListResourcesParams) },
	"resources/templates/list":         func() any { return new(mcp.ListResourceTemplatesParams) },
	"resources/read":                   nil, // by kind only (Message.paramsErr)
	"logging/setLevel":                 func() any { return new(mcp.SetLoggingLevelParams) },
	"resources/subscribe":              func() any { return new(mcp.SubscribeParams) },
	"subscriptions/listen":             func() any { return new(mcp.SubscriptionsListenParams) },
	"resources/unsubscribe":            func() any { return new(mcp.UnsubscribeParams) },
	"notifications/cancelled":          func() any { return new(mcp.CancelledParams) },
	"notifications/initialized":        func() any { return new(mcp.InitializedParams) },
	"notifications/roots/list_changed": func() any { return new(mcp.RootsListChangedParams) },
	"notifications/progress":           func() any { return new(mcp.ProgressNotificationParams) },
}

// paramsRequired are the methods of serverMethods whose params go-sdk
// v1.8.0 requires (its serverMethodInfos without missingParamsOK). It
// refuses a request for one with params absent in plain text, before
// dispatch, and with params null as -32600 (initialize: code 0); Check
// refuses both as the malformed params they are (CONTRACT §4).
var paramsRequired = map[string]bool{
	"completion/complete":   true,
	"initialize":            true,
	"prompts/get":           true,
	"tools/call":            true,
	"resources/read":        true,
	"logging/setLevel":      true,
	"resources/subscribe":   true,
	"subscriptions/listen":  true,
	"resources/unsubscribe": true,
}

var errNoParams = &ParamsError{`Invalid params: missing required "params"`}

// MethodError is a request for a method go-sdk does not serve.
type MethodError struct{ Method string }

func (e *MethodError) Error() string { return "Method not found: " + e.Method }

// ParamsError is a request whose params do not fit its method; the text is
// the message for the client.
type ParamsError struct{ Msg string }

func (e *ParamsError) Error() string { return e.Msg }

// Check checks the method and params of a request or notification
// (responses pass): *MethodError for a method go-sdk does not serve,
// *ParamsError for params it would refuse, absent or null ones of a
// request whose method requires them included. A message without an id
// and one in a batch keep go-sdk's plain-text answer to missing params
// (docs/decisions.md, "The JSON-RPC envelope").
func Check(m *Message) error {
	if !m.HasMethod {
		return nil // a response: go-sdk takes it as one
	}
	newParams, known := serverMethods[m.Method]
	if !known {
		return &MethodError{m.Method}
	}
	p := bytes.TrimSpace(m.Params)
	if len(p) == 0 || string(p) == "null" {
		if m.HasID && !m.inBatch && paramsRequired[m.Method] {
			return errNoParams
		}
		return nil
	}
	if p[0] != '{' {
		return &ParamsError{"Invalid params: params must be an object"}
	}
	if newParams == nil {
		// By kind only: tools/call's arguments, maybe megabytes, are the
		// tool's to check; resources/read, the hottest path, has two members.
		return m.paramsErr
	}
	if m.paramsErr != nil && inputResponsesOf[m.Method] {
		return m.paramsErr
	}
	err := json.Unmarshal(p, newParams())
	var te *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &te) && te.Field != "":
		return &ParamsError{"Invalid params: " + te.Field + " must be " + mcptool.DescribeType(te.Type)}
	case errors.As(err, &te):
		return &ParamsError{"Invalid params: a value must be " + mcptool.DescribeType(te.Type)}
	default:
		return &ParamsError{"Invalid params: they do not fit " + m.Method}
	}
}

// inputResponsesOf are the methods besides tools/call and resources/read
// whose params may carry the inputResponses of a multi-round-trip request
// (SEP-2322): an object of objects (each an elicitation, sampling or roots
// result). null, a number, an array, or a response that is not an object
// are protocol errors, answered -32602 before any tool or upstream runs.
var inputResponsesOf = map[string]bool{"prompts/get": true}
