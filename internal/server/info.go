package server

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/spillway-gw/spillway/internal/dialect"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/json/jsonwrite"
	"github.com/spillway-gw/spillway/internal/keys"
	"github.com/spillway-gw/spillway/internal/ledger"
)

// handleHealthz answers /healthz and /readyz: 200 while the gateway can
// take billable requests, 503 with the reason while its ledger cannot
// record them (an orchestrator then routes traffic elsewhere). The reason
// is a short name; the detail, with paths, is in the log.
func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if s.opts.Ledger != nil {
		if err := s.opts.Ledger.Unavailable(); err != nil {
			reason := "ledger_unavailable"
			var ue *ledger.UnavailableError
			if errors.As(err, &ue) {
				reason = ue.Reason
			}
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"status":"unavailable","reason":"` + reason + `","error":"ledger_unavailable"}`))
			return
		}
	}
	_, _ = w.Write([]byte(`{"status":"ok"}`))
}

// modelsDialect is the dialect a models request speaks: Anthropic's SDKs
// send anthropic-version on every call, OpenAI's never do.
func modelsDialect(r *http.Request) dialect.Dialect {
	if r.Header.Get("Anthropic-Version") != "" {
		return anthropicMessages()
	}
	return openaiChat()
}

// visibleModels lists the public models the caller may use: every model
// for the admin key, the key's own list for a restricted virtual key.
func (s *Server) visibleModels(w http.ResponseWriter, r *http.Request, d dialect.Dialect) ([]string, bool) {
	models := s.opts.Catalog.Load().Models()
	if s.isAdmin(r) {
		return models, true
	}
	key, pub := s.authenticate(r)
	if pub != nil {
		writeDialectError(w, d, pub)
		return nil, false
	}
	return slices.DeleteFunc(models, func(m string) bool { return !keys.Allows(key, m) }), true
}

// handleModels lists the models the caller may use, in the list shape of
// the caller's SDK: OpenAI's {object, data} or Anthropic's {data, has_more,
// first_id, last_id}. The list is short and always fits one page.
func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	d := modelsDialect(r)
	models, ok := s.visibleModels(w, r, d)
	if !ok {
		return
	}
	anthropic := d.Name() == anthropicMessages().Name()
	b := []byte(`{"object":"list","data":[`)
	if anthropic {
		b = []byte(`{"data":[`)
	}
	created := s.opts.Now()
	for i, m := range models {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendModel(b, m, created, anthropic)
	}
	b = append(b, ']')
	if anthropic {
		b = append(b, `,"has_more":false,"first_id":`...)
		b = appendFirstLast(b, models)
	}
	b = append(b, '}')
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// handleModel answers GET /v1/models/{id}: the model when it exists and
// the caller may use it, else a 404 in the caller's dialect.
func (s *Server) handleModel(w http.ResponseWriter, r *http.Request) {
	d := modelsDialect(r)
	models, ok := s.visibleModels(w, r, d)
	if !ok {
		return
	}
	id := r.PathValue("id")
	if !slices.Contains(models, id) {
		writeDialectError(w, d, &failure.Public{Status: http.StatusNotFound, Code: "model_not_found", Param: "model",
			Message: "the model " + strconv.Quote(id) + " does not exist on this gateway or this key may not use it; GET /v1/models lists the models"})
		return
	}
	b := appendModel(nil, id, s.opts.Now(), d.Name() == anthropicMessages().Name())
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

func appendModel(b []byte, id string, created time.Time, anthropic bool) []byte {
	if anthropic {
		b = append(b, `{"type":"model","id":`...)
		b = jsonwrite.AppendString(b, id)
		b = append(b, `,"display_name":`...)
		b = jsonwrite.AppendString(b, id)
		b = append(b, `,"created_at":"`...)
		b = created.UTC().AppendFormat(b, time.RFC3339)
		return append(b, `"}`...)
	}
	b = append(b, `{"id":`...)
	b = jsonwrite.AppendString(b, id)
	b = append(b, `,"object":"model","created":`...)
	b = strconv.AppendInt(b, created.Unix(), 10)
	return append(b, `,"owned_by":"spillway"}`...)
}

func appendFirstLast(b []byte, models []string) []byte {
	if len(models) == 0 {
		return append(b, `null,"last_id":null`...)
	}
	b = jsonwrite.AppendString(b, models[0])
	b = append(b, `,"last_id":`...)
	return jsonwrite.AppendString(b, models[len(models)-1])
}

// writeDialectError writes an error in d's shape.
func writeDialectError(w http.ResponseWriter, d dialect.Dialect, pub *failure.Public) {
	h := w.Header()
	if pub.RetryAfter > 0 {
		h.Set("Retry-After", strconv.FormatInt(int64((pub.RetryAfter+time.Second-1)/time.Second), 10))
	}
	h.Set("Content-Type", "application/json")
	b := d.AppendError(nil, pub)
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(pub.Status)
	_, _ = w.Write(b)
}
