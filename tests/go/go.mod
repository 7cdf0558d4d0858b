module weft.dev/weft/tests

go 1.19

require weft.dev/weft v0.0.0

replace weft.dev/weft => ../../frontends/go
