package fields

import (
	"encoding/json"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/dialect"
	"github.com/spillway-gw/spillway/internal/failure"
)

// Function is what a function tool and a JSON-schema response format
// declare in every dialect: a name, a description, a JSON Schema and
// strict. The Has fields say which members were given (null included), for
// the rules that tie members to a form.
type Function struct {
	Name, Description string
	Schema            json.RawMessage
	Strict            bool // null and absent are false

	HasName, HasDescription, HasSchema, HasStrict bool
}

// FunctionMember reads the value of key into f when key is one of a
// function's members: name, description (null is absent), strict (null is
// false) or the schema, named schemaKey (an object or null). Any other
// member it leaves unread (see Fields). p is the function's path, by
// pointer: a Path is large, and this runs for every member of every tool.
func (r *Reader) FunctionMember(p *Path, key []byte, schemaKey string, f *Function) (e *failure.Public) {
	switch string(key) {
	case "name":
		// NameMember's two lines, not a call to it: one call less per tool.
		f.HasName = true
		f.Name, e = r.Str(p.F("name"))
	case "description":
		f.HasDescription = true
		f.Description, _, e = r.OptStr(p.F("description"))
	case "strict":
		f.HasStrict = true
		var b, given bool
		if b, given, e = r.MaybeBool(p.F("strict")); given {
			f.Strict = b
		}
	default:
		// Not a case of the switch: a variable case would make the
		// compiler test the constant ones one by one.
		if string(key) == schemaKey {
			f.HasSchema = true
			f.Schema, e = r.Schema(p.F(schemaKey))
		}
	}
	return e
}

// NameMember reads the value of key into f when key is "name", the one
// member of the objects that name a function (a tool choice); any other
// member it leaves unread (see Fields).
func (r *Reader) NameMember(p *Path, key []byte, f *Function) (e *failure.Public) {
	if string(key) == "name" {
		f.HasName = true
		f.Name, e = r.Str(p.F("name"))
	}
	return e
}

// CheckName reports a function at p without a name, or with a name that
// providers refuse (see dialect.ValidToolName).
func (f *Function) CheckName(w *Wording, p *Path) *failure.Public {
	switch {
	case !f.HasName:
		return w.Missing(p.F("name"))
	case !dialect.ValidToolName(f.Name):
		return w.BadName(p.F("name"))
	}
	return nil
}

// Tool is the function as a canonical tool.
func (f *Function) Tool() canonical.Tool {
	return canonical.Tool{Name: f.Name, Description: f.Description, Parameters: f.Schema, Strict: f.Strict}
}

// Format is the function as a canonical JSON-schema response format (a
// format's description only guides the model; no provider needs it).
func (f *Function) Format() *canonical.ResponseFormat {
	return &canonical.ResponseFormat{Type: canonical.FormatJSONSchema, Name: f.Name, Schema: f.Schema, Strict: f.Strict}
}

// BadName reports a tool or format name at p that does not match the
// pattern every provider accepts.
func (w *Wording) BadName(p Path) *failure.Public { return bad(p, w.Pattern) }
