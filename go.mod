module github.com/bankml/bankml

go 1.26

require (
	github.com/alecthomas/kong v1.17.0
	github.com/ebitengine/purego v0.11.3
)
