from cmem.fast import main

main()
