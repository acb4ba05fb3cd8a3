from quineling.app import serving_app

app = serving_app()
