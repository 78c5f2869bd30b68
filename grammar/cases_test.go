package grammar

// ownGrammars are grammars written for what llama.cpp's grammars/ folder does
// not exercise: token terminals (by id, by text, negated), {m,n} edges,
// astral and CJK ranges, negated classes, escapes, comments, CRLF line ends,
// nested groups, empty alternatives. The Qwen3-only ones use its special
// tokens by text.
var ownGrammars = []struct {
	name   string
	text   string
	qwen3  bool     // needs the Qwen3 vocabulary (token terminals by text)
	inputs []string // texts fed token by token: valid, partial and invalid
}{
	{name: "repetition edges", text: "root ::= \"a\"{0} \"b\"{1} [c]{2,} \"d\"{0,1} (\"e\" | \"f\"){1,3} \"g\"{3}\n",
		inputs: []string{"bccdeeggg", "bcccccfeeggg", "bcc", "bccdefeggg", "bcggg", "bccdggg"}},
	{name: "CJK and astral ranges", text: "root ::= [一-鿿]+ [\\U0001F600-\\U0001F64F]* [^\\x00-\\x7F]? \"。\"\n",
		inputs: []string{"你好世界😀😃。", "中文。", "中😀é。", "abc", "中文😀", "日本語です。"}},
	{name: "negated classes and escapes", text: "root ::= \"\\\"\" ( [^\"\\\\\\n] | \"\\\\\" [\"\\\\nt] )* \"\\\"\" [\\t\\r\\n]* ( [\\x41-\\x43] | [\\u00e9\\u00e8] )?\n",
		inputs: []string{"\"hello\\n world\"\tA", "\"a\\\"b\"é", "\"unterminated", "\"bad\nline\"", "\"x\"\r\n\nè"}},
	{name: "comments and CRLF", text: "# a comment\r\nroot ::= item (\",\" item)* # trailing\r\n\r\nitem ::= [a-z]+ | \"(\" item \")\" # nested\r\n",
		inputs: []string{"abc,de,(f)", "((x)),y", "a,", "(a", "ABC"}},
	{name: "any char and empty alternatives", text: "root ::= \"<\" tail\ntail ::= . tail | \">\" | \n",
		inputs: []string{"<anything at all>", "<", "<ü€😀>", "x<"}},
	{name: "nested groups and optional", text: "root ::= ( ( \"a\" | \"b\" )? ( \"c\" ( \"d\" | \"e\"+ )* )+ ) \"!\"\n",
		inputs: []string{"acdeee!", "bcc!", "c!", "ab!", "cdd"}},
	{name: "token ids", text: "root ::= <[3]> \"x\" !<[3]> [a-z]*\n",
		inputs: nil},
	{name: "think tokens", qwen3: true, text: "root ::= <think> [^<]* </think> \"\\n\\n\" answer\nanswer ::= [A-Za-z ]+ \".\"\n",
		inputs: []string{"<think>\nreasoning here\n</think>\n\nThe answer.", "<think></think>\n\nYes.", "<think>x</think>yes", "no think"}},
	{name: "negated special token", qwen3: true, text: "root ::= ( !<|im_end|> )* <|im_end|>\n",
		inputs: []string{"any text at all<|im_end|>", "<|im_end|>", "<|im_start|>user<|im_end|>"}},
	{name: "tool call tokens", qwen3: true, text: "root ::= <tool_call> \"\\n{\\\"name\\\": \\\"\" [a-z_]+ \"\\\"}\\n\" </tool_call>\n",
		inputs: []string{"<tool_call>\n{\"name\": \"get_weather\"}\n</tool_call>", "<tool_call>\n{\"name\": \"X\"}", "hello"}},
}

// badGrammars are texts the parser or init refuses, each with the reason.
var badGrammars = []struct {
	name, text string
}{
	{"no rule name", "::= \"a\"\n"},
	{"missing ::=", "root = \"a\"\n"},
	{"unterminated literal", "root ::= \"abc\n"},
	{"unterminated class", "root ::= [a-z"},
	{"unknown escape", "root ::= \"\\q\"\n"},
	{"short hex escape", "root ::= \"\\x4\"\n"},
	{"short unicode escape", "root ::= [\\u12G4]\n"},
	{"undefined rule", "root ::= foo\n"},
	{"undefined rule among others", "root ::= foo bar\nbar ::= \"x\"\n"},
	{"repetition without item", "root ::= * \"a\"\n"},
	{"repetition of nothing in a group", "root ::= ( +\"a\" )\n"},
	{"unclosed group", "root ::= ( \"a\" \n"},
	{"brace without int", "root ::= \"a\"{x}\n"},
	{"brace without close", "root ::= \"a\"{2,3\n"},
	{"brace without comma", "root ::= \"a\"{2;3}\n"},
	{"too many repetitions", "root ::= \"a\"{2001}\n"},
	{"repetitions times rules", "root ::= (\"a\" | \"b\"){50}{50}\n"},
	{"huge repetition count", "root ::= \"a\"{99999999999999999999}\n"},
	{"junk after rule", "root ::= \"a\" )\n"},
	{"token without vocabulary id end", "root ::= <[12\n"},
	{"token id without >", "root ::= <[12]\n"},
	{"token id overflow", "root ::= <[99999999999999999999]>\n"},
	{"negation without token", "root ::= !\"a\"\n"},
	{"unknown token text", "root ::= <not a token>\n"},
	{"unterminated token", "root ::= <abc"},
	{"empty text", ""},
	{"only comments", "# nothing here\n"},
	{"no root", "start ::= \"a\"\n"},
	{"left recursion", "root ::= root \"a\" | \"b\"\n"},
	{"hidden left recursion", "root ::= e root \"a\" | \"b\"\ne ::= \"\" | \"c\"\n"},
	{"multi-byte start", "root ::= \"\xe4\xbd\"\n"},
}
