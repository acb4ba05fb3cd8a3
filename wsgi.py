from quineling import create_app

app = create_app()
