from openrecipes.cli import main

main()
