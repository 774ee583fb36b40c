"""Several checks in one Python process (torch is imported once), for the
flex tests' scripts: each case is a fixed number of arguments; prints
"checked N cases, M through flex_attention" and returns the exit status."""


def run_cases(args, width, check, usage):
    """check(*case) -> (passed, through flex_attention) for each `width`
    arguments of `args`; 0 when every case passes, 1 when one fails, 2 for
    arguments that are not whole cases (after printing `usage`)."""
    if not args or len(args) % width:
        print(usage)
        return 2
    cases = [args[i:i + width] for i in range(0, len(args), width)]
    passed, through = 0, 0
    for case in cases:
        ok, flex = check(*case)
        passed += ok
        through += flex
        if not ok:
            print("FAILED")
    print(f"checked {len(cases)} cases, {through} through flex_attention")
    return 0 if passed == len(cases) else 1
