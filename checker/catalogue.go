package checker

import (
	"fmt"
	"strings"
)

// rowDef is one entry of the catalogue: a row every report carries, in
// this order.
type rowDef struct {
	id    string
	layer string
	kind  Kind
	// kind2025 overrides kind when the negotiated version is 2025-11-25
	// (a MUST of 2026-07-28 that 2025-11-25 did not have).
	kind2025 Kind
	check    string
	basis    string
}

// How kinds are decided: normative = a MUST / MUST NOT of the MCP
// specification of the negotiated version (the schema, the spec text, or
// a definition the spec gives, such as cacheScope "public" meaning "does
// not contain user-specific data"); additional = a SHOULD of the spec, or a
// condition of resourced's CONTRACT.md, of docs/fixtures.md or of the
// acceptance sheet (seed 000); observed = behaviour nothing requires.
//
// SEP-2164 (2026-07-28): resources/read of a nonexistent resource MUST be
// JSON-RPC error -32602 and MUST NOT be an empty contents array; the error
// data SHOULD include the uri. So U06 is normative and U07 (data.uri)
// additional on 2026-07-28. The 2025-11-25 spec only suggested -32002, so
// there U06 accepts -32602 or -32002 and is additional; resourced's own
// -32602 on both versions is checked by the store-contract rows.
var catalogue = []rowDef{
	// Universal: any MCP server.
	{"U01", LayerUniversal, Normative, "", "handshake: server/discover (2026-07-28) or initialize + notifications/initialized (2025-11-25) succeeds with a valid result", "lifecycle; schema DiscoverResult / InitializeResult"},
	{"U02", LayerUniversal, Normative, "", "tools/list (every page) validates; tool names are unique", "server/tools; schema ListToolsResult"},
	{"U03", LayerUniversal, Normative, "", "resources/list (every page) validates, when the resources capability is declared", "server/resources; schema ListResourcesResult"},
	{"U04", LayerUniversal, Normative, "", "resources/templates/list validates, when the resources capability is declared", "server/resources; schema ListResourceTemplatesResult"},
	{"U05", LayerUniversal, Normative, "", "prompts/list validates, when the prompts capability is declared", "server/prompts; schema ListPromptsResult"},
	{"U06", LayerUniversal, Normative, Additional, "resources/read of an unknown URI is a JSON-RPC error -32602 (2025-11-25: -32602 or -32002), never a result or empty contents", "SEP-2164 (MUST on 2026-07-28); 2025-11-25 resources §Error Handling"},
	{"U07", LayerUniversal, Additional, "", "that not-found error carries data.uri equal to the URI as sent", "SEP-2164 (SHOULD)"},
	{"U08", LayerUniversal, Additional, "", "tools/call of an unknown tool is a JSON-RPC error, not a result", "server/tools §Error Handling (protocol errors)"},
	{"U09", LayerUniversal, Normative, "", "every tool's inputSchema and outputSchema compiles as a JSON Schema (2020-12 unless $schema says otherwise), with no external $ref fetched", "server/tools; basic §JSON Schema usage"},
	{"U10", LayerUniversal, Normative, "", "every structuredContent returned by a tool with an outputSchema conforms to it, and every successful result of such a tool has structuredContent", "server/tools §Output Schema (MUST)"},
	{"U11", LayerUniversal, Additional, "", "every successful result with structuredContent also has a text item equal to JSON(structuredContent)", "server/tools §Structured Content (SHOULD); acceptance sheet S01"},
	{"U12", LayerUniversal, Normative, Additional, "resources/read of listed resources validates and carries ttlMs (integer ≥ 0) and cacheScope", "schema ReadResourceResult (2026-07-28); CONTRACT §3 on 2025-11-25"},
	{"U13", LayerUniversal, Normative, "", "every response validates against the official JSON Schema of the negotiated version (envelope and result type)", "schema/<version>/schema.json"},
	{"U14", LayerUniversal, Normative, "", "every 2026-07-28 result carries resultType (\"complete\" for every request the checker sends)", "schema Result (2026-07-28)"},
	{"U15", LayerUniversal, Observed, "", "transport: media types of responses, HTTP status of JSON-RPC errors, session handling", "transports §Streamable HTTP"},

	// Store contract: CONTRACT §3/§4 tools.
	{"C01", LayerStore, Additional, "", "save_report (text, unlisted, private) succeeds: status \"created\", uri, size and sha256 of the body", "CONTRACT §4"},
	{"C02", LayerStore, Additional, "", "its resource_link carries uri, name, title, description, mimeType, size (body bytes) and annotations.lastModified, and no body", "CONTRACT §4; acceptance sheet L01"},
	{"C03", LayerStore, Additional, "", "the unlisted report reads back by URI: same bytes, mimeType, _meta sha256/size/lastModified", "CONTRACT §3; acceptance sheet L02"},
	{"C04", LayerStore, Additional, "", "the unlisted report is absent from resources/list; a report saved with listed: true is in it and reads back", "CONTRACT §3 (listed vs unlisted)"},
	{"C05", LayerStore, Normative, Additional, "every read of private tenant data says cacheScope \"private\"", "schema ReadResourceResult: \"public\" = no user-specific data; CONTRACT §3"},
	{"C06", LayerStore, Normative, Additional, "every read of stored data carries ttlMs, an integer ≥ 0", "schema ReadResourceResult (2026-07-28); CONTRACT §3"},
	{"C07", LayerStore, Additional, "", "a report saved with visibility \"public\" reads with cacheScope \"public\"", "CONTRACT §3"},
	{"C08", LayerStore, Additional, "", "save_search_snapshot: total equals the number of hits, and the stored {query,total,hits} equals what was sent", "CONTRACT §4; acceptance sheet (semantic check)"},
	{"C09", LayerStore, Additional, "", "save_search_snapshot with total 999 and 2 hits is refused (validation_error), and total \"2\" too", "CONTRACT §4 (semantic check); acceptance sheet"},
	{"C10", LayerStore, Additional, "", "save_report is create-only: a second save of the path is a conflict and the body is unchanged", "CONTRACT §4 (preconditions)"},
	{"C11", LayerStore, Additional, "", "ifMatch: the current sha256 replaces (status \"replaced\"), a stale one and a missing path are conflicts, delete with a stale ifMatch is a conflict", "CONTRACT §4 (preconditions)"},
	{"C12", LayerStore, Additional, "", "stat_resource gives the metadata without the body; list_resources (owner's view) includes the unlisted report", "CONTRACT §4"},
	{"C13", LayerStore, Additional, "", "tool errors are results: isError, a text that explains, structuredContent {status \"failed\", errorKind, message, retrySafe}; an empty body is a validation_error", "CONTRACT §4; server/tools §Error Handling"},
	{"C14", LayerStore, Normative, Additional, "after delete_resource, reading the URI is JSON-RPC error -32602, not empty contents", "SEP-2164 (MUST on 2026-07-28); CONTRACT §3"},
	{"C15", LayerStore, Additional, "", "not-found errors of a deleted and a never-existing URI are identical (code, message, data) but for data.uri, which is the URI as sent", "CONTRACT §3"},
	{"C16", LayerStore, Observed, "", "cleanup: everything this run stored was deleted again", "checker"},

	// Acceptance sheet (seed 000) against the fixture tools (docs/fixtures.md).
	{"T01", LayerAcceptance, Additional, "", "search_text: one text item whose JSON is the search result (marker T01), no structuredContent", "acceptance sheet T01; docs/fixtures.md"},
	{"S01", LayerAcceptance, Additional, "", "search_structured: structuredContent validates against the outputSchema and the text is byte-equal to JSON(structuredContent)", "acceptance sheet S01; docs/fixtures.md"},
	{"E01", LayerAcceptance, Additional, "", "search_embedded (and probe_embedded_text/_blob): the embedded body arrives with uri and mimeType and equals resources/read of that URI", "acceptance sheet E01; docs/fixtures.md"},
	{"L01", LayerAcceptance, Additional, "", "search_link (and probe_link_listed/_unlisted): a resource_link with uri, name, mimeType, size and no body", "acceptance sheet L01; docs/fixtures.md"},
	{"L02", LayerAcceptance, Additional, "", "the linked URI reads back although it is not in resources/list: size = body bytes, _meta.sha256 matches", "acceptance sheet L02; docs/fixtures.md"},
	{"A01", LayerAcceptance, Normative, Additional, "resources/read of search://fixtures/results/fixture-missing is JSON-RPC error -32602 with data.uri", "acceptance sheet; SEP-2164"},
	{"A02", LayerAcceptance, Additional, "", "semantic check: the four forms carry the same {query,total,hits} and total equals the number of hits", "acceptance sheet (business meaning)"},
	{"A03", LayerAcceptance, Additional, "", "S01's outputSchema rejects total \"2\"; total 999 with 2 hits passes it and only the semantic check catches it", "acceptance sheet (type vs meaning)"},
	{"A04", LayerAcceptance, Additional, "", "probe_text_differs: the schema passes and the check text == JSON(structuredContent) detects the difference", "acceptance sheet; docs/fixtures.md"},
	{"P01", LayerAcceptance, Observed, "", "probe_structured_only: content [] with structuredContent (marker S02)", "seed 002; docs/fixtures.md"},
	{"P02", LayerAcceptance, Observed, "", "probe_error: isError with text X01 and structuredContent.message X02", "seed 002; docs/fixtures.md"},
	{"P03", LayerAcceptance, Observed, "", "probe_audience: text A01 for audience user, A02 for assistant", "seed 002; docs/fixtures.md"},
	{"P04", LayerAcceptance, Observed, "", "probe_size_*: text of exactly 10000/40000/66000/155000 bytes with first and last markers, equal to the stored body", "seed 002; docs/fixtures.md"},
	{"P05", LayerAcceptance, Observed, "", "probe_sc_*: on 2026-07-28 structuredContent [] \"\" 0 false null present; on 2025-11-25 absent, text only", "seed 000/002; docs/fixtures.md"},
}

// Catalogue returns every row the checker reports, in order, with the kind
// it has on version (2026-07-28 or 2025-11-25), no status and no evidence.
func Catalogue(version string) []Row {
	out := make([]Row, 0, len(catalogue))
	for _, d := range catalogue {
		k := d.kind
		if version == V2025 && d.kind2025 != "" {
			k = d.kind2025
		}
		out = append(out, Row{ID: d.id, Layer: d.layer, Kind: k, Check: d.check, Basis: d.basis})
	}
	return out
}

// catalogueMarkdown is the catalogue as the Markdown table of README.md
// (TestCatalogueREADME keeps the two equal).
func catalogueMarkdown() string {
	var b strings.Builder
	b.WriteString("| id | layer | kind | checks | basis |\n|---|---|---|---|---|\n")
	for _, d := range catalogue {
		kind := string(d.kind)
		if d.kind2025 != "" {
			kind += " (2025-11-25: " + string(d.kind2025) + ")"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", d.id, d.layer, kind, mdCell(d.check), mdCell(d.basis))
	}
	return b.String()
}
