package service

import (
	"context"
	"testing"

	"github.com/theory/jsonpath"
)

func BenchmarkQueryWorkBudget(b *testing.B) {
	for _, tc := range []struct {
		name, q string
		n       int
	}{
		{"count-4000", `$..[?count($..*) > 0]`, 4000},
		{"count-83000", `$..[?count($..*) > 0]`, 83_000},
		{"exists-4000", `$..[?$..[?$..*]]`, 4000},
		{"regex", `$..[?search(@, "(a|aa|aaa){1,100}z")]`, 4000},
		{"descend", `$..*`, 83_000},
	} {
		b.Run(tc.name, func(b *testing.B) {
			v, _ := decodeJSON([]byte(quadratic(tc.n)))
			qs, err := compileQuery(jsonpath.MustParse(tc.q))
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				_, work, err := evaluateQuery(context.Background(), qs, v, MaxQueryWork)
				b.ReportMetric(float64(work), "units")
				_ = err
			}
		})
	}
}
