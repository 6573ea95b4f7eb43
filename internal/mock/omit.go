package mock

import "encoding/json"

// omitJSONField removes the top-level field name from a JSON object
// answer (omit_field=): the answer stays valid JSON, one field short, as
// a provider that flattens or drops a field answers. Anything else, or
// an empty name, is returned as is.
func omitJSONField(text, name string) string {
	if name == "" {
		return text
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(text), &obj) != nil {
		return text
	}
	if _, ok := obj[name]; !ok {
		return text
	}
	delete(obj, name)
	b, err := json.Marshal(obj) // keys sorted: deterministic
	if err != nil {
		return text
	}
	return string(b)
}
