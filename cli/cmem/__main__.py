from cmem.cli import main

main()
