"""`cmem doctor`: what is wrong with this vault and how to fix it (`checks`), and
`cmem doctor --fix`, which finishes or rolls back what an interrupted step left (`doctor_fix`)."""
