package server

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/keys"
	"github.com/spillway-gw/spillway/internal/ledger"
)

// KeyRequest is the body of POST /v1/admin/keys.
type KeyRequest struct {
	Org    string   `json:"org"`
	Team   string   `json:"team"`
	Models []string `json:"models,omitempty"`
	// Residency keeps the key's requests on deployments there (e.g. "eu").
	Residency string `json:"residency,omitempty"`
	// Priority is the key's requests' priority when shedding (low,
	// normal, high, critical) and the most a request header may claim.
	// Default normal.
	Priority string `json:"priority,omitempty"`
	Limits
}

// Limits are a scope's budget and rate limits in a request body; nil or
// zero means no limit.
type Limits struct {
	CreditUSD   *float64 `json:"credit_usd,omitempty"`
	DailyCapUSD *float64 `json:"daily_cap_usd,omitempty"`
	RPM         int      `json:"rpm,omitempty"`
	TPM         int      `json:"tpm,omitempty"`
}

// Empty reports whether no limit is set.
func (l *Limits) Empty() bool {
	return l.CreditUSD == nil && l.DailyCapUSD == nil && l.RPM == 0 && l.TPM == 0
}

// Budget turns limits into the ledger's budget row for a scope.
func (l *Limits) Budget(scope, id string, now time.Time) (*ledger.Budget, error) {
	b := &ledger.Budget{Scope: scope, ID: id, RPM: l.RPM, TPM: l.TPM, UpdatedAt: now.UTC()}
	var err error
	if b.CreditMicroUSD, err = micro(l.CreditUSD); err != nil {
		return nil, err
	}
	if b.DailyCapMicroUSD, err = micro(l.DailyCapUSD); err != nil {
		return nil, err
	}
	if l.RPM < 0 || l.TPM < 0 {
		return nil, errors.New("rpm and tpm must not be negative")
	}
	return b, nil
}

func micro(usd *float64) (*int64, error) {
	if usd == nil {
		return nil, nil
	}
	if !(*usd >= 0) || math.IsInf(*usd, 0) || *usd > 1e12 {
		return nil, errors.New("amounts must be finite and not negative")
	}
	v := int64(math.Round(*usd * 1e6))
	return &v, nil
}

// KeyCreated is the answer to POST /v1/admin/keys: the secret appears here
// once and never again.
type KeyCreated struct {
	ID     string   `json:"id"`
	Key    string   `json:"key"`
	Org    string   `json:"org"`
	Team   string   `json:"team"`
	Models []string `json:"models,omitempty"`
}

// KeyInfo is a key as listed (no secret).
type KeyInfo struct {
	ID        string     `json:"id"`
	Prefix    string     `json:"prefix"`
	Org       string     `json:"org"`
	Team      string     `json:"team"`
	Models    []string   `json:"models,omitempty"`
	Residency string     `json:"residency,omitempty"`
	Priority  string     `json:"priority,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

// CreateKey makes a key with optional key-scope limits; shared by the
// admin API and the CLI.
func CreateKey(ctx context.Context, st ledger.Store, kr *KeyRequest, now time.Time) (*KeyCreated, error) {
	if kr.Org == "" || kr.Team == "" {
		return nil, errors.New("org and team are required")
	}
	if _, ok := catalog.ParsePriority(kr.Priority); !ok {
		return nil, fmt.Errorf("priority %q is not one of %s", kr.Priority, strings.Join(catalog.PriorityNames[:], ", "))
	}
	var b *ledger.Budget
	if !kr.Limits.Empty() {
		var err error
		if b, err = kr.Limits.Budget(ledger.ScopeKey, "", now); err != nil {
			return nil, err
		}
	}
	secret, k, err := keys.NewKey(ctx, st, keys.Spec{Org: kr.Org, Team: kr.Team, Models: kr.Models, Residency: kr.Residency, Priority: kr.Priority}, now)
	if err != nil {
		return nil, err
	}
	if b != nil {
		b.ID = k.ID
		if err := st.SetBudget(ctx, b); err != nil {
			return nil, err
		}
	}
	return &KeyCreated{ID: k.ID, Key: secret, Org: k.Org, Team: k.Team, Models: k.Models}, nil
}

// ListKeys lists keys without secrets.
func ListKeys(ctx context.Context, st ledger.Store) ([]KeyInfo, error) {
	ks, err := st.Keys(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]KeyInfo, 0, len(ks))
	for _, k := range ks {
		ki := KeyInfo{ID: k.ID, Prefix: k.Prefix, Org: k.Org, Team: k.Team, Models: k.Models, Residency: k.Residency, Priority: k.Priority, CreatedAt: k.CreatedAt}
		if !k.RevokedAt.IsZero() {
			t := k.RevokedAt
			ki.RevokedAt = &t
		}
		out = append(out, ki)
	}
	return out, nil
}

func (s *Server) needStore(w http.ResponseWriter) bool {
	if s.opts.Store == nil {
		writeJSONError(w, &failure.Public{Status: http.StatusNotFound, Code: "no_ledger", Message: "this gateway runs without a ledger"})
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeJSONError(w, failure.BadRequest("", "invalid body: %v", err))
		return false
	}
	return true
}

func (s *Server) handleCreateKey(w http.ResponseWriter, r *http.Request) {
	if !s.needStore(w) {
		return
	}
	var kr KeyRequest
	if !decodeBody(w, r, &kr) {
		return
	}
	kc, err := CreateKey(r.Context(), s.opts.Store, &kr, s.opts.Now())
	if err != nil {
		writeJSONError(w, failure.BadRequest("", "%v", err))
		return
	}
	s.reloadBudgets(r.Context())
	writeJSON(w, http.StatusCreated, kc)
}

func (s *Server) handleListKeys(w http.ResponseWriter, r *http.Request) {
	if !s.needStore(w) {
		return
	}
	ks, err := ListKeys(r.Context(), s.opts.Store)
	if err != nil {
		writeJSONError(w, &failure.Public{Status: http.StatusInternalServerError, Code: "ledger_error", Message: err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"keys": ks})
}

func (s *Server) handleRevokeKey(w http.ResponseWriter, r *http.Request) {
	if !s.needStore(w) {
		return
	}
	err := s.opts.Auth.Revoke(r.Context(), r.PathValue("id"))
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		writeJSONError(w, &failure.Public{Status: http.StatusNotFound, Code: "key_not_found", Message: "no key " + strconv.Quote(r.PathValue("id"))})
	case err != nil:
		writeJSONError(w, &failure.Public{Status: http.StatusInternalServerError, Code: "ledger_error", Message: err.Error()})
	default:
		writeJSON(w, http.StatusOK, map[string]any{"id": r.PathValue("id"), "revoked": true})
	}
}

// BudgetRequest is the body of PUT /v1/admin/budgets.
type BudgetRequest struct {
	Scope string `json:"scope"`
	ID    string `json:"id"`
	Limits
}

func (s *Server) handleSetBudget(w http.ResponseWriter, r *http.Request) {
	if !s.needStore(w) {
		return
	}
	var br BudgetRequest
	if !decodeBody(w, r, &br) {
		return
	}
	switch br.Scope {
	case ledger.ScopeOrg, ledger.ScopeTeam, ledger.ScopeKey, ledger.ScopeModel:
	default:
		writeJSONError(w, failure.BadRequest("scope", "scope must be org, team, key or model"))
		return
	}
	if br.ID == "" {
		writeJSONError(w, failure.BadRequest("id", "id is required"))
		return
	}
	b, err := br.Limits.Budget(br.Scope, br.ID, s.opts.Now())
	if err != nil {
		writeJSONError(w, failure.BadRequest("", "%v", err))
		return
	}
	if err := s.opts.Store.SetBudget(r.Context(), b); err != nil {
		writeJSONError(w, &failure.Public{Status: http.StatusInternalServerError, Code: "ledger_error", Message: err.Error()})
		return
	}
	s.reloadBudgets(r.Context())
	writeJSON(w, http.StatusOK, b)
}

func (s *Server) handleListBudgets(w http.ResponseWriter, r *http.Request) {
	if !s.needStore(w) {
		return
	}
	bs, err := s.opts.Store.Budgets(r.Context())
	if err != nil {
		writeJSONError(w, &failure.Public{Status: http.StatusInternalServerError, Code: "ledger_error", Message: err.Error()})
		return
	}
	out := map[string]any{"budgets": bs}
	if s.opts.Budget != nil {
		out["live"] = s.opts.Budget.Snapshot()
	}
	writeJSON(w, http.StatusOK, out)
}

// reloadBudgets applies the ledger's budgets at once (admin changes).
func (s *Server) reloadBudgets(ctx context.Context) {
	if s.opts.Budget == nil {
		return
	}
	bs, err := s.opts.Store.Budgets(ctx)
	if err != nil {
		s.opts.Log.Warn("reloading budgets", "err", err)
		return
	}
	s.opts.Budget.SetBudgets(bs)
}

// handleUsage reports settled usage: the admin key sees everything, a
// virtual key only its own requests.
func (s *Server) handleUsage(w http.ResponseWriter, r *http.Request) {
	if !s.needStore(w) {
		return
	}
	q, pub := ParseUsageQuery(r.URL.Query(), s.opts.Now())
	if pub != nil {
		writeJSONError(w, pub)
		return
	}
	if !s.isAdmin(r) {
		k, pub := s.authenticate(r)
		if pub != nil {
			writeJSONError(w, pub)
			return
		}
		q.Filters["key"] = k.ID
	}
	if s.opts.Ledger != nil {
		// Settlements reach the store from the ledger's journal in the
		// background: flush them, so the report has every finished request.
		if err := s.opts.Ledger.Sync(r.Context()); err != nil {
			s.opts.Log.Warn("flushing the ledger before a usage report", "err", err)
		}
	}
	rows, err := s.opts.Store.Usage(r.Context(), q)
	if err != nil {
		writeJSONError(w, failure.BadRequest("", "%v", err))
		return
	}
	if r.URL.Query().Get("format") == "csv" {
		w.Header().Set("Content-Type", "text/csv")
		_ = WriteUsageCSV(w, q.GroupBy, rows)
		return
	}
	groupBy := q.GroupBy
	if groupBy == nil {
		groupBy = []string{}
	}
	if rows == nil {
		rows = []ledger.UsageRow{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"from": q.From, "to": q.To, "group_by": groupBy, "rows": rows})
}

// ParseUsageQuery reads from, to (RFC 3339 or YYYY-MM-DD), group_by
// (comma-separated) and filters (org, team, key, model, deployment).
func ParseUsageQuery(v map[string][]string, now time.Time) (ledger.UsageQuery, *failure.Public) {
	get := func(k string) string {
		if vs := v[k]; len(vs) > 0 {
			return vs[0]
		}
		return ""
	}
	q := ledger.UsageQuery{Filters: map[string]string{}}
	for _, f := range []struct {
		name string
		dst  *time.Time
	}{{"from", &q.From}, {"to", &q.To}} {
		s := get(f.name)
		if s == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			if t, err = time.Parse(time.DateOnly, s); err != nil {
				return q, failure.BadRequest(f.name, "%s must be RFC 3339 or YYYY-MM-DD", f.name)
			}
		}
		*f.dst = t
	}
	// Defaults a reader expects: up to now, from 30 days before the end.
	if q.To.IsZero() {
		q.To = now.UTC()
	}
	if q.From.IsZero() {
		q.From = q.To.AddDate(0, 0, -30)
	}
	if !q.From.Before(q.To) {
		return q, failure.BadRequest("from", "from (%s) must be before to (%s)", q.From.Format(time.RFC3339), q.To.Format(time.RFC3339))
	}
	if g := get("group_by"); g != "" {
		for _, name := range strings.Split(g, ",") {
			switch name = strings.TrimSpace(name); name {
			case "org", "team", "key", "model", "deployment", "day":
				q.GroupBy = append(q.GroupBy, name)
			default:
				return q, failure.BadRequest("group_by", "cannot group by %q (org, team, key, model, deployment, day)", name)
			}
		}
	}
	for _, f := range []string{"org", "team", "key", "model", "deployment"} {
		if val := get(f); val != "" {
			q.Filters[f] = val
		}
	}
	return q, nil
}

// WriteUsageCSV writes a usage report as CSV.
func WriteUsageCSV(w io.Writer, groupBy []string, rows []ledger.UsageRow) error {
	cw := csv.NewWriter(w)
	head := append(append([]string{}, groupBy...), "requests", "succeeded", "failed", "failed_over", "attempts", "input_tokens", "output_tokens", "cached_tokens", "cost_usd")
	_ = cw.Write(head)
	for _, r := range rows {
		rec := make([]string, 0, len(head))
		for _, g := range groupBy {
			rec = append(rec, r.Group[g])
		}
		for _, n := range []int64{r.Requests, r.Succeeded, r.Failed, r.FailedOver, r.Attempts, r.InputTokens, r.OutputTokens, r.CachedTokens} {
			rec = append(rec, strconv.FormatInt(n, 10))
		}
		rec = append(rec, formatUSD(r.CostMicroUSD))
		_ = cw.Write(rec)
	}
	cw.Flush()
	return cw.Error()
}

// SortUsage orders rows by cost, then by group, for stable output.
func SortUsage(rows []ledger.UsageRow) {
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].CostMicroUSD > rows[j].CostMicroUSD })
}
