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
// error.
package envelope

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/resourced/resourced/internal/jsonwire"
	"github.com/resourced/resourced/server/internal/mcptool"
	"github.com/resourced/resourced/service"
)

// Beyond that, what go-sdk would answer with Go's words (a params value of
// the wrong type: "into a *mcp.ReadResourceParams"; a method that is not a
// string: "jsonrpc2.wireDecode"; an unknown method: a text/plain 400) is
// answered here in JSON-RPC's: no object anywhere in the body names a
// member twice (encoding/json would keep the last); jsonrpc is "2.0"; a
// method is a string that go-sdk serves (-32601 otherwise; an unknown
// notification is accepted and ignored, as JSON-RPC wants); params, when
// present, decode into what the method takes, else -32602 naming the
// member and the JSON type it needs.

// Message is what the envelope check reads of one JSON-RPC message.
type Message struct {
	Method, Tool string
	HasID        bool
	HasMethod    bool
	ID           []byte // raw JSON; nil when absent
	Params       []byte // raw JSON; nil when absent
}

// Error is a body that is not acceptable JSON-RPC; its text is the
// reason given to the client.
type Error struct{ Reason string }

func (e *Error) Error() string { return e.Reason }

// Parse checks body and returns its messages. jsonwire.ErrSyntax means the
// body is not one JSON value; *errEnvelope that it is not valid JSON-RPC.
func Parse(body []byte) ([]Message, error) {
	if !json.Valid(body) {
		return nil, jsonwire.ErrSyntax
	}
	if err := jsonwire.UniqueMembers(body); err != nil {
		var de *jsonwire.DuplicateError
		if errors.As(err, &de) {
			return nil, &Error{de.Error()}
		}
		return nil, err
	}
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		var msgs []Message
		err := jsonwire.Elements(body, func(_ int, v []byte) error {
			m, err := parseMessage(v)
			msgs = append(msgs, m)
			return err
		})
		if err != nil {
			return nil, err
		}
		return msgs, nil
	}
	m, err := parseMessage(body)
	if err != nil {
		return nil, err
	}
	return []Message{m}, nil
}

// maxSafeID is the largest integer id every JSON implementation carries
// exactly (2^53 - 1).
const maxSafeID = 1<<53 - 1

func parseMessage(data []byte) (Message, error) {
	var m Message
	if d := bytes.TrimLeft(data, " \t\r\n"); len(d) == 0 || d[0] != '{' {
		return m, &Error{"a JSON-RPC message is an object (a batch, an array of them)"}
	}
	var hasMethod, hasResult, versionOK bool
	err := jsonwire.Members(data, func(name string, v []byte) error {
		switch name {
		case "jsonrpc":
			versionOK = string(v) == `"2.0"` || v[0] == '"' && mustString(v) == "2.0"
		case "id":
			if string(v) == "null" {
				return nil // go-sdk answers a null id itself
			}
			m.HasID, m.ID = true, v
			if v[0] == '"' {
				return nil
			}
			n, err := strconv.ParseInt(string(v), 10, 64)
			if err != nil || n > maxSafeID || n < -maxSafeID {
				return &Error{"the id must be a string or an integer between -(2^53-1) and 2^53-1, got " + service.Truncate(string(v), 40)}
			}
		case "method":
			hasMethod, m.HasMethod = true, true
			var ok bool
			if m.Method, ok = jsonwire.View(v); !ok {
				return &Error{"the method must be a string"}
			}
		case "result", "error":
			hasResult = true
		case "params":
			m.Params = v
			return jsonwire.Members(v, func(name string, pv []byte) error {
				if name == "name" {
					m.Tool, _ = jsonwire.View(pv)
				}
				return nil
			})
		}
		return nil
	})
	if err != nil {
		return m, err
	}
	if !versionOK {
		return m, &Error{`the jsonrpc member must be "2.0"`}
	}
	if m.HasID && !hasMethod && !hasResult {
		return m, &Error{"a message with an id needs a method (a request) or a result or error (a response)"}
	}
	return m, nil
}

func mustString(v []byte) string {
	s, _ := jsonwire.String(v)
	return s
}

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
	"tools/call":                       nil, // checkKinds: its arguments may be most of the body
	"resources/list":                   func() any { return new(mcp.ListResourcesParams) },
	"resources/templates/list":         func() any { return new(mcp.ListResourceTemplatesParams) },
	"resources/read":                   nil, // checkKinds: the hottest path, two members
	"logging/setLevel":                 func() any { return new(mcp.SetLoggingLevelParams) },
	"resources/subscribe":              func() any { return new(mcp.SubscribeParams) },
	"subscriptions/listen":             func() any { return new(mcp.SubscriptionsListenParams) },
	"resources/unsubscribe":            func() any { return new(mcp.UnsubscribeParams) },
	"notifications/cancelled":          func() any { return new(mcp.CancelledParams) },
	"notifications/initialized":        func() any { return new(mcp.InitializedParams) },
	"notifications/roots/list_changed": func() any { return new(mcp.RootsListChangedParams) },
	"notifications/progress":           func() any { return new(mcp.ProgressNotificationParams) },
}

// MethodError is a request for a method go-sdk does not serve.
type MethodError struct{ Method string }

func (e *MethodError) Error() string { return "Method not found: " + e.Method }

// ParamsError is a request whose params do not fit its method; the text is
// the message for the client.
type ParamsError struct{ Msg string }

func (e *ParamsError) Error() string { return e.Msg }

// Check checks the method and params of a request or notification
// (responses pass): *errMethod for a method go-sdk does not serve,
// *errParams for params it would refuse.
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
		return nil // go-sdk decides whether the method needs params
	}
	if p[0] != '{' {
		return &ParamsError{"Invalid params: params must be an object"}
	}
	if newParams == nil {
		return checkKinds(p, kindsOf[m.Method]) // inputResponses too, in the same pass
	}
	if inputResponsesOf[m.Method] {
		if err := checkInputResponses(p); err != nil {
			return err
		}
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

// kindsOf are the JSON kinds of the params members of the methods checked
// by kind only (checkKinds): tools/call, whose arguments (possibly
// megabytes) are the tool's to check, answered with a validation_error
// result; resources/read, the hottest path, which has only these two.
var kindsOf = map[string]map[string]byte{
	"tools/call":     {"name": '"', "_meta": '{'},
	"resources/read": {"uri": '"', "_meta": '{'},
}

// inputResponsesOf are the methods whose params may carry the
// inputResponses of a multi-round-trip request (SEP-2322).
var inputResponsesOf = map[string]bool{"tools/call": true, "prompts/get": true, "resources/read": true}

// checkInputResponses refuses an inputResponses member that is not an
// object of objects (each an elicitation, sampling or roots result):
// null, a number, an array, or a response that is not an object are
// protocol errors, answered -32602 before any tool or upstream runs.
func checkInputResponses(p []byte) error {
	return jsonwire.Members(p, func(name string, v []byte) error {
		if !strings.EqualFold(name, "inputResponses") {
			return nil
		}
		return checkInputResponsesValue(v)
	})
}

var errInputResponses = &ParamsError{"Invalid params: inputResponses must be an object whose values are input responses (objects)"}

// checkInputResponsesValue checks the value of an inputResponses member.
func checkInputResponsesValue(v []byte) error {
	if v[0] != '{' {
		return errInputResponses
	}
	return jsonwire.Members(v, func(_ string, r []byte) error {
		if r[0] != '{' {
			return errInputResponses
		}
		return nil
	})
}

// checkKinds checks that the members of params named in kinds (compared
// as go-sdk's decoder compares them, ignoring case) hold a value of that
// kind or null, without decoding them, and an inputResponses member as
// checkInputResponses does, in the same pass.
func checkKinds(p []byte, kinds map[string]byte) error {
	return jsonwire.Members(p, func(name string, v []byte) error {
		if strings.EqualFold(name, "inputResponses") {
			return checkInputResponsesValue(v) // both methods take them (SEP-2322)
		}
		for want, kind := range kinds {
			if !strings.EqualFold(name, want) || v[0] == kind || string(v) == "null" {
				continue
			}
			what := "an object"
			if kind == '"' {
				what = "a string"
			}
			return &ParamsError{"Invalid params: " + want + " must be " + what}
		}
		return nil
	})
}
