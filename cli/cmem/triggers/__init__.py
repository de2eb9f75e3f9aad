"""What starts a pass or brings memory in: the due rule (`due`, stdlib only, shared with the light
entry path), the if-due rules and background passes (`if_due`), `cmem watch` (`watch`) and
`cmem note` quick capture (`capture`)."""
