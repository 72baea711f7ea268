package gateway

import (
	"strings"
)

// Namespacing (docs/gateway.md): the one place that maps upstream tool and
// prompt names and URIs to the front's, and back.
//
// Tools and prompts: with two or more upstreams every name is
// "<upstream>__<name>"; a front name splits at its first "__", and since an
// upstream name cannot contain "_" the split cannot land inside another
// upstream's namespace. With one upstream, names pass unchanged except a
// name that is one of the gateway's own tools, or that starts with
// "<upstream>__" (it would read back as a shorter name): those are listed
// prefixed. The prefixed form is accepted in every case.
//
// URIs: with two or more upstreams every URI gets "<upstream>+" before it;
// a front URI splits at its first "+". With one upstream, URIs pass
// unchanged except those whose scheme is one of resourced's or whose head
// (the part before the first ":", or the whole URI without one) holds a
// "+": those are prefixed, so resourced's URIs and prefixed ones never
// meet an upstream's own.

// toolSep separates an upstream's name from a tool or prompt name.
const toolSep = "__"

// uriSep separates an upstream's name from a URI.
const uriSep = "+"

// names is the namespacing of one gateway: its upstreams in config order,
// the front's own tool names and resourced's schemes.
type names struct {
	upstreams []string
	known     map[string]bool
	own       map[string]bool // the gateway's own tools (read_resource, …)
	schemes   map[string]bool // resourced's schemes, lower case
}

func newNames(upstreams, ownTools, schemes []string) *names {
	n := &names{upstreams: upstreams, known: map[string]bool{}, own: map[string]bool{}, schemes: map[string]bool{}}
	for _, u := range upstreams {
		n.known[u] = true
	}
	for _, t := range ownTools {
		n.own[t] = true
	}
	for _, s := range schemes {
		n.schemes[strings.ToLower(s)] = true
	}
	return n
}

func (n *names) single() bool { return len(n.upstreams) == 1 }

// frontTool is the name upstream's tool (or prompt) name is listed under.
// isTool says whether the gateway's own tool names are reserved (prompts
// have none).
func (n *names) frontTool(upstream, name string, isTool bool) string {
	if n.single() && !(isTool && n.own[name]) && !strings.HasPrefix(name, upstream+toolSep) {
		return name
	}
	return upstream + toolSep + name
}

// backTool maps a front tool (or prompt) name to its upstream and the
// upstream's name. ok is false for a name no upstream has: one of the
// gateway's own tools (isTool), or a prefix naming no upstream.
func (n *names) backTool(front string, isTool bool) (upstream, name string, ok bool) {
	if up, rest, cut := strings.Cut(front, toolSep); cut && n.known[up] {
		return up, rest, true
	}
	if !n.single() || (isTool && n.own[front]) {
		return "", "", false
	}
	return n.upstreams[0], front, true
}

// uriHead is the part of raw before its first ":" (its scheme when it has
// one), or raw.
func uriHead(raw string) string {
	if i := strings.IndexByte(raw, ':'); i >= 0 {
		return raw[:i]
	}
	return raw
}

// frontURI is the URI upstream's URI raw is shown under. Templates go
// through it too: their head is a literal scheme.
func (n *names) frontURI(upstream, raw string) string {
	if n.single() {
		head := uriHead(raw)
		if !strings.Contains(head, uriSep) && !n.schemes[strings.ToLower(head)] {
			return raw
		}
	}
	return upstream + uriSep + raw
}

// backURI maps a front URI to its upstream and the upstream's URI. ok is
// false for a URI of resourced's (a scheme of its own) or of no upstream;
// both are resourced's to answer (an ordinary read, or not found).
func (n *names) backURI(front string) (upstream, raw string, ok bool) {
	head := uriHead(front)
	if up, _, cut := strings.Cut(head, uriSep); cut {
		if !n.known[up] {
			return "", "", false
		}
		return up, front[len(up)+len(uriSep):], true
	}
	if !n.single() || n.schemes[strings.ToLower(head)] {
		return "", "", false
	}
	return n.upstreams[0], front, true
}

// resourcedURI reports whether a front URI is resourced's own: a read of it
// is an ordinary resourced read.
func (n *names) resourcedURI(front string) bool {
	return n.schemes[strings.ToLower(uriHead(front))]
}
