import { undoSimulationSuite } from "./undoSuite.ts"

undoSimulationSuite("sqlite")
