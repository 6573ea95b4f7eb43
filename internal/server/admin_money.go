package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/keys"
	"github.com/spillway-gw/spillway/internal/ledger"
)

// The admin API's key and limit bodies are the keys and ledger packages'
// (the CLI makes keys offline with the same code); these names stay for
// callers of the server's API.
type (
	// KeyRequest is the body of POST /v1/admin/keys.
	KeyRequest = keys.Request
	// Limits are a scope's budget and rate limits in a request body.
	Limits = ledger.Limits
	// KeyCreated is the answer to POST /v1/admin/keys.
	KeyCreated = keys.Created
	// KeyInfo is a key as listed (no secret).
	KeyInfo = keys.Info
)

// CreateKey makes a key with optional key-scope limits (keys.Create).
func CreateKey(ctx context.Context, st ledger.Store, kr *KeyRequest, now time.Time) (*KeyCreated, error) {
	return keys.Create(ctx, st, kr, now)
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
	kc, err := keys.Create(r.Context(), s.opts.Store, &kr, s.opts.Now())
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
	ks, err := keys.List(r.Context(), s.opts.Store)
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
	if !ledger.IsScope(br.Scope) {
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
	q, err := ledger.ParseUsageQuery(r.URL.Query(), s.opts.Now())
	if err != nil {
		param := ""
		if pe := (*ledger.ParamError)(nil); errors.As(err, &pe) {
			param = pe.Param
		}
		writeJSONError(w, failure.BadRequest(param, "%v", err))
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
	rows, pub := s.usageRows(r.Context(), q)
	if pub != nil {
		writeJSONError(w, pub)
		return
	}
	if r.URL.Query().Get("format") == "csv" {
		w.Header().Set("Content-Type", "text/csv")
		_ = ledger.WriteUsageCSV(w, q.GroupBy, rows)
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
