package resourced_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	resourced "github.com/resourced/resourced/client"
	"github.com/resourced/resourced/client/clienttest"
)

// startExample starts an in-process resourced for an example; a real
// program has the URL of its resourced and a token from its identity
// provider (or `resourced token`).
func startExample() (*clienttest.Server, func()) {
	srv, err := clienttest.Start(nil)
	if err != nil {
		log.Fatal(err)
	}
	return srv, srv.Close
}

func ExampleNewClient() {
	srv, stop := startExample()
	defer stop()

	c, err := resourced.NewClient(srv.URL, resourced.StaticToken(srv.Token("acme")), nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(c.Endpoint() == srv.URL)
	// Output: true
}

func ExampleClient_SaveReport() {
	srv, stop := startExample()
	defer stop()
	ctx := context.Background()
	c, _ := resourced.NewClient(srv.URL, resourced.StaticToken(srv.Token("acme")), nil)

	saved, err := c.SaveReport(ctx, &resourced.Report{
		Path:     "billing/2026-11/summary",
		MIMEType: "text/csv",
		Text:     "region,total\nnorth,12\n",
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(saved.Status, saved.URI, saved.Size)
	// saved.Link is the resource_link to return from your own tool.
	fmt.Println(saved.Link.URI == saved.URI)

	// Saves are create-only unless told otherwise.
	_, err = c.SaveReport(ctx, &resourced.Report{Path: "billing/2026-11/summary", MIMEType: "text/csv", Text: "x\n"})
	fmt.Println(errors.Is(err, resourced.ErrConflict))

	// Replace it only if nobody else did in between.
	replaced, err := c.SaveReport(ctx, &resourced.Report{
		Path: "billing/2026-11/summary", MIMEType: "text/csv", Text: "region,total\nnorth,13\n",
		IfMatch: saved.SHA256,
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(replaced.Status)
	// Output:
	// created report://acme/billing/2026-11/summary 22
	// true
	// true
	// replaced
}

func ExampleClient_Read() {
	srv, stop := startExample()
	defer stop()
	ctx := context.Background()
	c, _ := resourced.NewClient(srv.URL, resourced.StaticToken(srv.Token("acme")), nil)
	saved, _ := c.SaveReport(ctx, &resourced.Report{Path: "notes/hello", MIMEType: "text/markdown", Text: "# Hello\n"})

	res, err := c.Read(ctx, saved.URI)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%q %s ttl=%v scope=%s\n", res.Body, res.MIMEType, res.TTL, res.CacheScope)

	// Unknown, deleted, expired and other tenants' URIs all read as not found.
	_, err = c.Read(ctx, "report://acme/notes/nope")
	fmt.Println(errors.Is(err, resourced.ErrNotFound))
	var wire *jsonrpc.Error
	if errors.As(err, &wire) {
		fmt.Println(wire.Code, wire.Message, string(wire.Data))
	}
	// Output:
	// "# Hello\n" text/markdown ttl=0s scope=private
	// true
	// -32602 Resource not found {"uri":"report://acme/notes/nope"}
}

func ExampleClient_SaveSearchSnapshot() {
	srv, stop := startExample()
	defer stop()
	ctx := context.Background()
	c, _ := resourced.NewClient(srv.URL, resourced.StaticToken(srv.Token("acme")), nil)

	saved, err := c.SaveSearchSnapshot(ctx, &resourced.SearchSnapshot{
		Query: "invoices overdue",
		Hits: []resourced.Hit{
			{ID: "inv-1", Title: "Invoice 1", Snippet: "due 2026-10-01"},
			{ID: "inv-2", Title: "Invoice 2", Snippet: "due 2026-10-15"},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(saved.MIMEType, saved.Total, saved.Title)
	// Output: application/json 2 Search results: invoices overdue
}

func ExampleToolError() {
	srv, stop := startExample()
	defer stop()
	c, _ := resourced.NewClient(srv.URL, resourced.StaticToken(srv.Token("acme")), nil)

	_, err := c.SaveReport(context.Background(), &resourced.Report{Path: "a//b", MIMEType: "text/plain", Text: "x"})
	var te *resourced.ToolError
	if errors.As(err, &te) {
		fmt.Println(te.Kind, te.RetrySafe, te.FieldErrors[0].Field)
	}
	fmt.Println(errors.Is(err, resourced.ErrValidation))
	// Output:
	// validation_error false path
	// true
}

func ExampleClient_WithTokenSource() {
	srv, stop := startExample()
	defer stop()
	ctx := context.Background()
	producer, _ := resourced.NewClient(srv.URL, resourced.StaticToken(srv.Token("acme")), nil)
	saved, _ := producer.SaveReport(ctx, &resourced.Report{Path: "private", MIMEType: "text/plain", Text: "acme only"})

	// The same connections, another tenant's token.
	beta := producer.WithTokenSource(resourced.StaticToken(srv.Token("beta")))
	_, err := beta.Read(ctx, saved.URI)
	fmt.Println(errors.Is(err, resourced.ErrNotFound))
	// Output: true
}
