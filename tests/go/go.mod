module weft/tests/go

go 1.19
