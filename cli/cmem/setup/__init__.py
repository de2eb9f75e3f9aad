"""What cmem installs: a folder made a vault (`init`), shell and agent hooks (`hooks`), the text
for an agent's instructions file (`agents`), and the trust a vault's own model command needs
(`trust`)."""
