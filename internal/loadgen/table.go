package loadgen

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Column is an extra column a caller adds to a results table: Value gives
// the cell of the i-th result.
type Column struct {
	Header string
	Value  func(i int) string
}

// WriteTable prints results as an aligned table: throughput, failures,
// latency and (streams) time to first byte in ms, then the extra columns.
func WriteTable(w io.Writer, rs []*Result, extra ...Column) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"name", "conc", "rps", "ok", "cut", "errors", "p50", "p90", "p99", "ttfb50", "ttfb99"}
	for _, c := range extra {
		head = append(head, c.Header)
	}
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for i, r := range rs {
		conc := strconv.Itoa(r.Concurrency)
		if r.Rate > 0 {
			conc = fmt.Sprintf("%s@%g/s", conc, r.Rate)
		}
		row := []string{r.Name, conc, fmt.Sprintf("%.0f", r.RPS), strconv.FormatInt(r.OK, 10),
			strconv.FormatInt(r.Cut, 10), errorsCell(r), msCell(r.Latency.P50), msCell(r.Latency.P90), msCell(r.Latency.P99)}
		if r.TTFB != nil {
			row = append(row, msCell(r.TTFB.P50), msCell(r.TTFB.P99))
		} else {
			row = append(row, "-", "-")
		}
		for _, c := range extra {
			row = append(row, c.Value(i))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	return tw.Flush()
}

// errorsCell is the failure count with the dropped arrivals, if any.
func errorsCell(r *Result) string {
	n := r.Failed() - r.Cut
	s := strconv.FormatInt(n, 10)
	if r.Dropped > 0 {
		s += fmt.Sprintf(" (+%d dropped)", r.Dropped)
	}
	return s
}

func msCell(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
