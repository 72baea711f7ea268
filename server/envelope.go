package server

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/resourced/resourced/internal/jsonwire"
)

// The envelope check runs on every /mcp POST before go-sdk sees the body.
// go-sdk v1.8.0 decodes only the first JSON value of a body (answering
// "{…} trailing" and dropping a second message), reads ids as float64
// (1.5 becomes 1, 2^53+1 becomes 2^53, 1e30 becomes -2^63), and takes a
// message with an id and no method for a response (202, no answer). And
// encoding/json would read "METHOD" as "method" where go-sdk does not, so
// the scope check must see the keys exactly as go-sdk will. So: the body
// must be one JSON value; every message's members are read with their
// exact names, none twice; an id is a string or an integer JSON can carry
// exactly (|n| < 2^53); a message with an id has a method, a result or an
// error.

// message is what the envelope check reads of one JSON-RPC message.
type message struct {
	method, tool string
	hasID        bool
}

// errEnvelope is a body that is not acceptable JSON-RPC; its text is the
// reason given to the client.
type errEnvelope struct{ reason string }

func (e *errEnvelope) Error() string { return e.reason }

// parseEnvelope checks body and returns its messages. jsonwire.ErrSyntax means the
// body is not one JSON value; *errEnvelope that it is not valid JSON-RPC.
func parseEnvelope(body []byte) ([]message, error) {
	if !json.Valid(body) {
		return nil, jsonwire.ErrSyntax
	}
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		var msgs []message
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
	return []message{m}, nil
}

// maxSafeID is the largest integer id every JSON implementation carries
// exactly (2^53 - 1).
const maxSafeID = 1<<53 - 1

func parseMessage(data []byte) (message, error) {
	var m message
	var hasMethod, hasResult bool
	seen := map[string]bool{}
	err := jsonwire.Members(data, func(name string, v []byte) error {
		if seen[name] {
			return &errEnvelope{"member " + strconv.Quote(name) + " appears twice"}
		}
		seen[name] = true
		switch name {
		case "id":
			if string(v) == "null" {
				return nil // go-sdk answers a null id itself
			}
			m.hasID = true
			if v[0] == '"' {
				return nil
			}
			n, err := strconv.ParseInt(string(v), 10, 64)
			if err != nil || n > maxSafeID || n < -maxSafeID {
				return &errEnvelope{"the id must be a string or an integer between -(2^53-1) and 2^53-1, got " + truncate(string(v), 40)}
			}
		case "method":
			hasMethod = true
			m.method, _ = jsonwire.String(v) // go-sdk answers a method that is not a string
		case "result", "error":
			hasResult = true
		case "params":
			return jsonwire.Members(v, func(name string, pv []byte) error {
				if name == "name" {
					m.tool, _ = jsonwire.String(pv)
				}
				return nil
			})
		}
		return nil
	})
	if err != nil {
		return m, err
	}
	if m.hasID && !hasMethod && !hasResult {
		return m, &errEnvelope{"a message with an id needs a method (a request) or a result or error (a response)"}
	}
	return m, nil
}
