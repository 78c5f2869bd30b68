package chat

// Specialized names the family of a template llama.cpp hands to a specialized handler ("" for none).
func Specialized(t *Template) string { return specializedFamily(t.source) }
