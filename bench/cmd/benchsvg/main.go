// Command benchsvg draws the ratio tables of bench/run.sh's results files as
// one SVG: for every scenario measured against a ceiling (the Markdown rows
// resourced-bench -md writes, with a ratio), one bar per results file, so
// that two revisions measured back to back stand side by side and a
// regression shows at a glance. It reads only the recorded numbers.
//
//	benchsvg -o bench/results/x.svg bench/results/x-f19491b.txt bench/results/x-HEAD.txt
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"html"
	"io"
	"os"
	"strconv"
	"strings"
)

// run is one results file: which build it measured and its ratios.
type run struct {
	commit string             // the commit line's first word
	label  string             // commit and date
	ratios map[string]float64 // scenario → ratio to its ceiling
	order  []string           // scenarios in the order first recorded
}

// parse reads a results file of bench/run.sh.
func parse(name string, r io.Reader) (*run, error) {
	ru := &run{ratios: map[string]float64{}}
	var commit, date string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "commit:"); ok && commit == "" {
			if f := strings.Fields(v); len(f) > 0 {
				commit = f[0]
			}
			continue
		}
		if v, ok := strings.CutPrefix(line, "date:"); ok && date == "" {
			date = strings.TrimSpace(v)
			continue
		}
		if !strings.HasPrefix(line, "| ") {
			continue
		}
		// | scenario | req/s | p50 | p90 | p99 | max | errors | ceiling req/s | ratio | ...
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) < 9 {
			continue
		}
		scenario := strings.TrimSpace(cells[0])
		ratio, err := strconv.ParseFloat(strings.TrimSpace(cells[8]), 64)
		if err != nil || scenario == "scenario" {
			continue // the header, or a row without a ceiling
		}
		if _, seen := ru.ratios[scenario]; !seen {
			ru.order = append(ru.order, scenario)
		}
		ru.ratios[scenario] = ratio
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if commit == "" {
		return nil, fmt.Errorf("%s: no commit line: not a results file of bench/run.sh", name)
	}
	ru.commit, ru.label = commit, commit
	if date != "" {
		ru.label += " (" + date + ")"
	}
	return ru, nil
}

// errNothing is the error of results without a ratio to a ceiling.
var errNothing = errors.New("no row with a ratio to a ceiling in the results")

// colors of the revisions, in the order they first appear: runs of one
// revision share its color.
var colors = []string{"#9aa5b1", "#2f6fb3", "#d08a2e", "#3a9a5b", "#a34a8f"}

const (
	labelWidth = 300 // the scenario names
	plotWidth  = 520
	barHeight  = 14
	barGap     = 3
	groupGap   = 12
	top        = 56
)

// draw writes the SVG of runs: for each scenario one bar per run, in the
// runs' order, one color per revision.
func draw(w io.Writer, runs []*run) error {
	var scenarios []string
	seen := map[string]bool{}
	maxRatio := 1.0
	for _, ru := range runs {
		for _, s := range ru.order {
			if !seen[s] {
				seen[s] = true
				scenarios = append(scenarios, s)
			}
			maxRatio = max(maxRatio, ru.ratios[s])
		}
	}
	if len(scenarios) == 0 {
		return errNothing
	}
	scale := plotWidth / (float64(int(maxRatio*4+0.999)) / 4) // pixels per 1.0, the axis ends on a quarter
	group := len(runs)*(barHeight+barGap) - barGap + groupGap
	height := top + len(scenarios)*group + 24*len(runs) + 30
	width := labelWidth + plotWidth + 60
	color := map[string]string{}
	for _, ru := range runs {
		if _, ok := color[ru.commit]; !ok {
			color[ru.commit] = colors[len(color)%len(colors)]
		}
	}
	b := bufio.NewWriter(w)
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(b, `<text x="10" y="20" font-size="14" font-weight="bold">req/s as a ratio to the ceiling measured in the same run (1.0 = the ceiling)</text>`+"\n")
	plotBottom := top + len(scenarios)*group - groupGap
	for q := 0; float64(q)/4 <= float64(plotWidth)/scale+1e-9; q++ {
		x := labelWidth + float64(q)/4*scale
		stroke := "#e3e3e3"
		if q%4 == 0 {
			stroke = "#b0b0b0"
		}
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s"/>`+"\n", x, top-8, x, plotBottom+4, stroke)
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#555">%.2f</text>`+"\n", x, top-12, float64(q)/4)
	}
	for i, s := range scenarios {
		y := top + i*group
		mid := y + (group-groupGap)/2 + 4
		fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", labelWidth-8, mid, html.EscapeString(s))
		for j, ru := range runs {
			by := y + j*(barHeight+barGap)
			r, ok := ru.ratios[s]
			if !ok {
				fmt.Fprintf(b, `<text x="%d" y="%d" fill="#999">not measured</text>`+"\n", labelWidth+4, by+barHeight-3)
				continue
			}
			fmt.Fprintf(b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"><title>%s: %.3f</title></rect>`+"\n",
				labelWidth, by, r*scale, barHeight, color[ru.commit], html.EscapeString(ru.label), r)
			fmt.Fprintf(b, `<text x="%.1f" y="%d" fill="#333">%.3f</text>`+"\n", float64(labelWidth)+r*scale+4, by+barHeight-3, r)
		}
	}
	for j, ru := range runs {
		y := plotBottom + 24 + j*24
		fmt.Fprintf(b, `<rect x="%d" y="%d" width="14" height="14" fill="%s"/>`+"\n", labelWidth, y, color[ru.commit])
		fmt.Fprintf(b, `<text x="%d" y="%d">%s</text>`+"\n", labelWidth+20, y+12, html.EscapeString(ru.label))
	}
	fmt.Fprintln(b, "</svg>")
	return b.Flush()
}

func main() {
	out := flag.String("o", "", "the SVG to write (default: standard output)")
	ifAny := flag.Bool("if-any", false, "when no results file holds a ratio to a ceiling, write nothing and exit 0 (bench/run.sh: a run of gateway or abuse scenarios only)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: benchsvg [-o out.svg] results.txt... (oldest first)")
		flag.PrintDefaults()
	}
	flag.Parse()
	err := mainErr(*out, flag.Args())
	if errors.Is(err, errNothing) && *ifAny {
		fmt.Fprintln(os.Stderr, "benchsvg: nothing to draw:", err)
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchsvg:", err)
		os.Exit(1)
	}
}

func mainErr(out string, files []string) error {
	if len(files) == 0 {
		return errors.New("no results file given")
	}
	var runs []*run
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		ru, err := parse(name, f)
		f.Close()
		if err != nil {
			return err
		}
		runs = append(runs, ru)
	}
	if out == "" {
		return draw(os.Stdout, runs)
	}
	if err := draw(io.Discard, runs); err != nil {
		return err // before out is created
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if err := draw(f, runs); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
