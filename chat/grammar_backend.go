package chat

// defaultGrammar is the grammar backend of every template: package grammar's schema parser and converter.
var defaultGrammar grammarBackend
