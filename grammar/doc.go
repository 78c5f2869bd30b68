// Package grammar is llama.cpp's GBNF grammars and its JSON schema to grammar converter, reproduced exactly: the same
// rules, masks, stacks, error messages and grammar text as the reference.
//
// # Design record
//
// What. [Parse] reads GBNF as llama_grammar_parser (src/llama-grammar.cpp); [New] builds a [Grammar] as
// llama_grammar_init_impl (start stacks, left recursion check, lazy triggers); [Grammar.Allows] and [Grammar.Mask] are
// llama_grammar_apply_impl for one token and for the whole vocabulary; [Grammar.Accept] is llama_grammar_accept_impl
// (trigger buffer and replay of lazy grammars, end-of-generation rule, partial UTF-8 across tokens). [FromJSONSchema],
// [ParseSchema], [Build] and [Builder] are common/json-schema.cpp and common/json-schema-to-grammar.cpp.
//
// How masks are fast. The reference decodes every token's piece and runs it through every stack on each draw. Here the
// stacks are hash-consed, a set of them is a state of an automaton whose transitions on code points are computed once,
// and a mask is one walk of a trie of the vocabulary's pieces (built once per [Vocab]) in which each node is reached in
// one state; masks are kept per state. Grammars made from the same text over a Vocab share that automaton.
//
// Deliberate differences. A repetition {m,n} with n < m, on which the reference loops forever, is a *ParseError. A
// schema constraint no value meets (minimum above maximum, bounds with no integer between them, minLength above
// maxLength, minItems above maxItems) is listed in [SchemaDocument.Contradictions] for callers to refuse; the
// converter's grammar for it stays the reference's. A required name its grammar never generates and an allOf
// component it drops are converter warnings (as an unsupported pattern is), with the reference's grammar. A token the grammar cannot take, where the reference throws or aborts, is an *AcceptError (the grammar is left as it
// was). Trigger patterns are matched by this package's own backtracking matcher of std::regex's ECMAScript syntax over
// bytes (Go's regexp has no lookahead and matches code points); a pattern it cannot read is an error, and a match that
// backtracks past a fixed step budget counts as no match. An empty grammar text is an *InitError here; callers treat ""
// as no grammar, as common_sampler_init does.
//
// Determinism. Masks and stacks are functions of the grammar text, the vocabulary and the tokens accepted; the order in
// which concurrent Grammars explore a shared automaton changes only its internal numbering.
package grammar
