package checker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// handshake negotiates the protocol version: server/discover for
// 2026-07-28 (the protocol has no initialize), initialize plus
// notifications/initialized for 2025-11-25. In auto mode a server whose
// discover fails or does not offer 2026-07-28 is spoken to in 2025-11-25.
func (r *run) handshake(ctx context.Context, protocol string) error {
	var discoverErr error
	if protocol != V2025 {
		err := r.discover(ctx)
		if err == nil || protocol == V2026 {
			return err
		}
		var te *transportError
		if errors.As(err, &te) && (te.conn || te.status == http.StatusUnauthorized || te.status == http.StatusForbidden) {
			return err // credentials or connection: 2025-11-25 would fare no better
		}
		discoverErr = err
		r.c.mu.Lock()
		r.c.log = nil // validated against the other version's schema
		r.c.mu.Unlock()
	}
	err := r.initialize(ctx)
	if err != nil && discoverErr != nil {
		return fmt.Errorf("2026-07-28: %v; 2025-11-25: %v", discoverErr, err)
	}
	return err
}

func (r *run) discover(ctx context.Context) error {
	r.c.version = V2026
	x, err := r.c.call(ctx, "server/discover", nil)
	if err != nil {
		return err
	}
	if x.Err != nil {
		return fmt.Errorf("server/discover: JSON-RPC error %d %q", x.Err.Code, x.Err.Message)
	}
	var res struct {
		SupportedVersions []string       `json:"supportedVersions"`
		Capabilities      map[string]any `json:"capabilities"`
		Meta              struct {
			ServerInfo *struct {
				Name    string `json:"name"`
				Version string `json:"version"`
			} `json:"io.modelcontextprotocol/serverInfo"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal(x.Result, &res); err != nil {
		return fmt.Errorf("server/discover: result is not an object: %v", err)
	}
	if !slices.Contains(res.SupportedVersions, V2026) {
		return fmt.Errorf("server/discover: supportedVersions %v does not offer %s", res.SupportedVersions, V2026)
	}
	r.caps = res.Capabilities
	if si := res.Meta.ServerInfo; si != nil {
		r.report.Server.Name, r.report.Server.Version = si.Name, si.Version
	}
	r.handshakeEvidence = fmt.Sprintf("server/discover: supportedVersions %v, capabilities %s", res.SupportedVersions, capNames(res.Capabilities))
	if x.SchemaErr != nil {
		r.handshakeProblems = append(r.handshakeProblems, "DiscoverResult invalid: "+x.SchemaErr.Error())
	}
	return nil
}

func (r *run) initialize(ctx context.Context) error {
	r.c.version = V2025
	x, err := r.c.call(ctx, "initialize", map[string]any{
		"protocolVersion": V2025,
		"capabilities":    map[string]any{},
		"clientInfo":      r.c.info,
	})
	if err != nil {
		return err
	}
	if x.Err != nil {
		return fmt.Errorf("initialize: JSON-RPC error %d %q", x.Err.Code, x.Err.Message)
	}
	var res struct {
		ProtocolVersion string         `json:"protocolVersion"`
		Capabilities    map[string]any `json:"capabilities"`
		ServerInfo      struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"serverInfo"`
	}
	if err := json.Unmarshal(x.Result, &res); err != nil {
		return fmt.Errorf("initialize: result is not an object: %v", err)
	}
	if res.ProtocolVersion != V2025 {
		return fmt.Errorf("initialize: the server answered protocolVersion %q; this checker speaks %s and %s", res.ProtocolVersion, V2026, V2025)
	}
	r.caps = res.Capabilities
	r.report.Server.Name, r.report.Server.Version = res.ServerInfo.Name, res.ServerInfo.Version
	status, err := r.c.notify(ctx, "notifications/initialized")
	if err != nil {
		return err
	}
	session := "stateless (no Mcp-Session-Id)"
	if r.c.sessionID != "" {
		session = "stateful (Mcp-Session-Id)"
	}
	r.handshakeEvidence = fmt.Sprintf("initialize: protocolVersion %s, capabilities %s, %s; notifications/initialized → HTTP %d", res.ProtocolVersion, capNames(res.Capabilities), session, status)
	if x.SchemaErr != nil {
		r.handshakeProblems = append(r.handshakeProblems, "InitializeResult invalid: "+x.SchemaErr.Error())
	}
	if status != http.StatusAccepted {
		r.handshakeProblems = append(r.handshakeProblems, fmt.Sprintf("notifications/initialized answered HTTP %d, want 202 Accepted", status))
	}
	return nil
}

func (r *run) setHandshakeRow() {
	r.report.Server.Capabilities = r.caps
	if len(r.handshakeProblems) > 0 {
		r.fail("U01", "%s", strings.Join(r.handshakeProblems, "; "))
		return
	}
	r.pass("U01", "%s", r.handshakeEvidence)
}

// capNames lists the capabilities a server declared.
func capNames(caps map[string]any) string {
	var names []string
	for k := range caps {
		names = append(names, k)
	}
	slices.Sort(names)
	return "[" + strings.Join(names, " ") + "]"
}

// declares reports whether the server declared capability name.
func (r *run) declares(name string) bool {
	_, ok := r.caps[name]
	return ok
}
