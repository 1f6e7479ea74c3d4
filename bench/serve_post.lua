-- wrk script of bench/serve_bench.sh: POSTs the JSON body in $BODY, and counts non-200 answers.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local f = assert(io.open(os.getenv("BODY"), "rb"))
wrk.body = f:read("*a")
f:close()
