package checker

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// WriteText writes the report as a table for a terminal: one line per row
// (id, kind, status, what it checks) and the evidence indented below it.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "resourced check %s — protocol %s — server %s\n", r.URL, r.Protocol, r.serverName())
	for _, l := range []string{LayerUniversal, LayerStore, LayerAcceptance} {
		fmt.Fprintf(&b, "  %-10s %s\n", l, r.Layers[l])
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "%-4s  %-10s  %-6s  %s\n", "ID", "KIND", "STATUS", "CHECK / evidence")
	for _, row := range r.Rows {
		fmt.Fprintf(&b, "%-4s  %-10s  %-6s  %s\n", row.ID, row.Kind, row.Status, row.Check)
		if row.Evidence != "" {
			fmt.Fprintf(&b, "%-4s  %-10s  %-6s    ↳ %s\n", "", "", "", row.Evidence)
		}
	}
	b.WriteString("\n" + r.SummaryLine() + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// SummaryLine says how the run went in one line.
func (r *Report) SummaryLine() string {
	s := r.Summary
	verdict := "all normative rows pass"
	if s.NormativeFail > 0 {
		verdict = fmt.Sprintf("%d normative row(s) FAIL", s.NormativeFail)
	}
	return fmt.Sprintf("%d rows: %d PASS, %d FAIL, %d SKIP (FAIL: %d normative, %d additional, %d observed) — %s",
		s.Rows, s.Pass, s.Fail, s.Skip, s.NormativeFail, s.AdditionalFail, s.ObservedFail, verdict)
}

func (r *Report) serverName() string {
	if r.Server.Name == "" {
		return "(unnamed)"
	}
	return strings.TrimSpace(r.Server.Name + " " + r.Server.Version)
}

// WriteMarkdown writes the report as a Markdown document with one table.
func (r *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# resourced check\n\n")
	fmt.Fprintf(&b, "- URL: `%s`\n- protocol: `%s`\n- server: %s\n- run: %s (%d ms)\n",
		r.URL, r.Protocol, mdCell(r.serverName()), r.StartedAt.Format("2006-01-02T15:04:05Z"), r.DurationMs)
	for _, l := range []string{LayerUniversal, LayerStore, LayerAcceptance} {
		fmt.Fprintf(&b, "- layer %s: %s\n", l, mdCell(r.Layers[l]))
	}
	fmt.Fprintf(&b, "\n%s\n\n", r.SummaryLine())
	b.WriteString("| id | kind | status | check | evidence |\n|---|---|---|---|---|\n")
	for _, row := range r.Rows {
		status := row.Status
		if status == Fail {
			status = "**FAIL**"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", row.ID, row.Kind, status, mdCell(row.Check), mdCell(row.Evidence))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func mdCell(s string) string {
	s = strings.ReplaceAll(s, "\\", "\\\\")
	s = strings.ReplaceAll(s, "|", "\\|")
	return strings.ReplaceAll(s, "\n", " ")
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}
