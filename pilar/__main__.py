from pilar.cli import main

main()
