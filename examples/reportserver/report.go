package main

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	resourced "github.com/resourced/resourced/client"
)

const (
	defaultRows = 42000 // about 2 MB of CSV
	maxRows     = 200000
)

type reportInput struct {
	Rows int    `json:"rows,omitempty" jsonschema:"number of data rows, 1 to 200000; default 42000 (about 2 MB)"`
	Seed uint64 `json:"seed,omitempty" jsonschema:"generator seed; the same seed and rows give the same CSV; default 1"`
}

type reportOutput struct {
	URI         string           `json:"uri" jsonschema:"the report; read it with resources/read on this server"`
	Rows        int              `json:"rows"`
	Columns     int              `json:"columns"`
	Bytes       int64            `json:"bytes"`
	SHA256      string           `json:"sha256"`
	Seed        uint64           `json:"seed"`
	RowsBy      map[string]int   `json:"rowsByRegion"`
	AmountBy    map[string]int64 `json:"amountCentsByRegion"`
	AmountCents int64            `json:"totalAmountCents"`
	ExpiresAt   string           `json:"expiresAt"`
}

var (
	regions  = []string{"north", "south", "east", "west"}
	products = []string{"anvil", "bolt", "crate", "dynamo", "engine", "flange", "gasket", "hinge"}
	columns  = []string{"id", "date", "region", "product", "quantity", "unit_price_cents", "amount_cents"}
)

// buildCSV generates rows of sales from seed; the same seed and rows give
// the same bytes.
func buildCSV(rows int, seed uint64) ([]byte, *reportOutput) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	out := &reportOutput{Rows: rows, Columns: len(columns), Seed: seed, RowsBy: map[string]int{}, AmountBy: map[string]int64{}}
	var b bytes.Buffer
	b.Grow(rows * 72)
	for i, c := range columns {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(c)
	}
	b.WriteByte('\n')
	day := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range rows {
		region := regions[rng.IntN(len(regions))]
		product := products[rng.IntN(len(products))]
		qty := int64(1 + rng.IntN(500))
		price := int64(100 + rng.IntN(99900))
		amount := qty * price
		date := day.AddDate(0, 0, rng.IntN(365)).Format("2006-01-02")
		b.WriteString("S" + strconv.Itoa(1000000+i) + "," + date + "," + region + "," + product + ",")
		b.WriteString(strconv.FormatInt(qty, 10) + "," + strconv.FormatInt(price, 10) + "," + strconv.FormatInt(amount, 10) + "\n")
		out.RowsBy[region]++
		out.AmountBy[region] += amount
		out.AmountCents += amount
	}
	return b.Bytes(), out
}

// generate builds a report, saves it with c (the caller's tenant) and
// renders the tool result.
func generate(ctx context.Context, c *resourced.Client, in reportInput) (*mcp.CallToolResult, *reportOutput, error) {
	rows, seed := in.Rows, in.Seed
	if rows == 0 {
		rows = defaultRows
	}
	if rows < 1 || rows > maxRows {
		return nil, nil, fmt.Errorf("rows must be between 1 and %d", maxRows)
	}
	if seed == 0 {
		seed = 1
	}
	csv, out := buildCSV(rows, seed)
	var id [4]byte
	cryptoRand(id[:])
	path := fmt.Sprintf("reportserver/sales/%s-seed%d-%s", time.Now().UTC().Format("20060102T150405Z"), seed, hex.EncodeToString(id[:]))
	saved, err := c.SaveReport(ctx, &resourced.Report{
		Path: path, MIMEType: "text/csv", Text: string(csv),
		Title:       fmt.Sprintf("Sales report, %d rows (seed %d)", rows, seed),
		Description: fmt.Sprintf("Generated sales CSV: %d rows, %d columns, %d bytes.", rows, len(columns), len(csv)),
	})
	if err != nil {
		var te *resourced.ToolError
		if errors.As(err, &te) {
			return nil, nil, fmt.Errorf("saving the report failed (%s): %s", te.Kind, te.Message)
		}
		return nil, nil, errors.New("saving the report failed: the report store is unavailable; retry later")
	}
	out.URI, out.Bytes, out.SHA256 = saved.URI, saved.Size, saved.SHA256
	out.ExpiresAt = saved.ExpiresAt.UTC().Format(time.RFC3339)
	summary := fmt.Sprintf("Generated a sales report: %d rows, %d columns, %d bytes of CSV, total %s. "+
		"The CSV is at %s (read it with resources/read); counts per region are in structuredContent.",
		rows, len(columns), saved.Size, money(out.AmountCents), saved.URI)
	content := []mcp.Content{&mcp.TextContent{Text: summary}}
	if saved.Link != nil {
		content = append(content, saved.Link)
	}
	return &mcp.CallToolResult{Content: content}, out, nil
}

func money(cents int64) string {
	return fmt.Sprintf("%d.%02d", cents/100, cents%100)
}

func cryptoRand(b []byte) {
	if _, err := crand.Read(b); err != nil {
		panic(err)
	}
}
